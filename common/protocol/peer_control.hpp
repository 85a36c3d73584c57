#pragma once

namespace rths {

// A stop or abort the peer sent (docs/architecture.md §5: either side may end the test). Both nodes count it: the
// numerical node from a site, a site from the numerical node.
enum class PeerControl { kNone, kStop, kAbort };

}  // namespace rths
