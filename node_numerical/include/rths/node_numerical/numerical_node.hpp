#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "rths/common/ground_motion.hpp"
#include "rths/common/link.hpp"
#include "rths/common/packet_codec.hpp"
#include "rths/common/recorder.hpp"
#include "rths/node_numerical/structure.hpp"
#include "rths/node_physical/physical_substructure.hpp"
#include "rths/smith_predictor/force_estimator.hpp"

namespace rths {

// One physical site as the numerical node sees it: remote behind a link with a force estimator
// per channel, or local (in process) with its substructure stepped directly.
struct NumericalSite {
  std::string name;
  std::uint32_t site_id = 0;
  Eigen::MatrixXd influence;  // Lambda_s, dofs x channels

  // Remote sites.
  Link* link = nullptr;
  std::vector<std::unique_ptr<ForceEstimator>> estimators;
  // Local sites.
  std::unique_ptr<PhysicalSubstructure> local;

  [[nodiscard]] bool is_local() const { return local != nullptr; }
  [[nodiscard]] Eigen::Index channels() const { return influence.cols(); }
};

struct SiteStats {
  PacketCounters packets;
  std::uint64_t held_steps = 0;  // steps without a new feedback packet
  std::uint64_t feedback_used = 0;
  std::int64_t newest_echo_step = -1;
};

// The numerical substructure and its Smith predictor parts (DESIGN §3, numerical step). The same
// object runs in virtual and real time: only the clock and the links it is handed differ.
class NumericalNode {
 public:
  struct Setup {
    std::uint64_t session = 0;
    double rate_hz = 1024.0;
    std::size_t max_rows = 0;
    std::vector<std::string> dof_names;
  };

  NumericalNode(Setup setup, StructuralModel structure, std::unique_ptr<Integrator> integrator,
                const GroundMotion& ground, const Clock& clock, std::vector<NumericalSite> sites);

  // Step k covers [t_k, t_k + dt): drain, estimate forces, integrate, send commands for k + 1, record.
  void step(std::int64_t k);

  [[nodiscard]] const Recorder& recorder() const { return recorder_; }
  [[nodiscard]] const StructuralState& state() const { return state_; }
  [[nodiscard]] const std::vector<SiteStats>& site_stats() const { return stats_; }
  [[nodiscard]] const std::vector<NumericalSite>& sites() const { return sites_; }
  // Recorded column holding the force the structure felt from a site channel.
  [[nodiscard]] static std::string force_column(const NumericalSite& site, Eigen::Index channel);

 private:
  struct SiteRuntime {
    std::unique_ptr<PacketCodec> codec;
    std::uint64_t sequence = 0;
    std::uint64_t newest_sequence = 0;
    bool have_feedback = false;
    std::vector<ChannelFeedback> newest;
    std::vector<InterfaceMotion> motion;
    std::vector<Measurement> measured;
    Eigen::VectorXd u, v, a, force;
  };

  void drain(std::size_t s);
  void send_command(std::size_t s, std::int64_t next_step);
  void interface_motion(std::size_t s);

  Setup setup_;
  StructuralModel structure_;
  std::unique_ptr<Integrator> integrator_;
  const GroundMotion& ground_;
  const Clock& clock_;
  std::vector<NumericalSite> sites_;
  std::vector<SiteRuntime> runtime_;
  std::vector<SiteStats> stats_;
  StructuralState state_;
  Eigen::VectorXd total_force_;
  Recorder recorder_;
  std::vector<double> row_;
  double dt_s_;
  std::array<std::byte, kMaxDatagramBytes> rx_{};
};

}  // namespace rths
