#pragma once

#include <stdexcept>

namespace rths::study {

// A study file, shard folder or override that cannot be used: one line naming the file (and line)
// and what was expected. rths-study prints it and exits 2, having run nothing.
class BadInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace rths::study
