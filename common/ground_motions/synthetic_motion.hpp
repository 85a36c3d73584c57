#pragma once

#include "common/dynamics/ground_motion.hpp"
#include "experiment.pb.h"

namespace rths {

// Kanai-Tajimi filtered white noise under a Jennings-Housner-Paulsen envelope, reproducible from the
// seed and scaled to peak at exactly pga_m_per_s2 (config SyntheticMotion, from a config the rules of
// synthetic_motion.cpp accepted). Throws std::invalid_argument for more samples than a ground motion
// may hold, and for a motion that comes out zero everywhere.
GroundMotion make_synthetic(const config::SyntheticMotion& spec);

}  // namespace rths
