// The modal reduction of an experiment to seed 004's SDOF partitions, and the loop a Smith predictor
// leaves (node_numerical/stability_plan.hpp, docs/stability.md).
#include "rths/node_numerical/stability_plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>
#include <Eigen/Dense>

#include "rths/node_numerical/structure.hpp"

namespace rths::plan {
namespace {

using Complex = std::complex<double>;

// The fixed-point iteration of a mode's frequency (the dampers' dynamic stiffness depends on it)
// stops when a step changes it by less than this fraction, or after kMaxIterations.
constexpr double kFrequencyTolerance = 1e-12;
constexpr int kMaxIterations = 200;

// A site channel's models as the reduction needs them: the specimen and the Smith predictor's model.
struct ChannelModels {
  config::Model specimen;
  config::Model prediction;
};

struct SiteModels {
  const config::Site* site = nullptr;
  Eigen::MatrixXd influence;  // dofs x channels
  std::vector<ChannelModels> channels;
};

// Lambda diag(h) Lambda^T, the channels' dynamic stiffness on the structure's DOFs.
Eigen::MatrixXcd on_structure(const Eigen::MatrixXd& influence, const std::vector<Complex>& h) {
  Eigen::VectorXcd diagonal(static_cast<Eigen::Index>(h.size()));
  for (std::size_t c = 0; c < h.size(); ++c) diagonal(static_cast<Eigen::Index>(c)) = h[c];
  const Eigen::MatrixXcd lambda = influence.cast<Complex>();
  return lambda * diagonal.asDiagonal() * lambda.transpose();
}

std::vector<Complex> specimens(const SiteModels& s, double omega) {
  std::vector<Complex> h;
  for (const auto& c : s.channels) h.push_back(dynamic_stiffness(c.specimen, omega));
  return h;
}

std::vector<Complex> errors(const SiteModels& s, double omega) {
  std::vector<Complex> h;
  for (const auto& c : s.channels) {
    h.push_back(dynamic_stiffness(c.specimen, omega) - dynamic_stiffness(c.prediction, omega));
  }
  return h;
}

// The reference structure's stiffness and damping with every site's specimens at omega.
void reference_at(const StructuralModel& structure, const std::vector<SiteModels>& sites, double omega,
                  Eigen::MatrixXd& stiffness, Eigen::MatrixXd& damping) {
  stiffness = structure.stiffness;
  damping = structure.damping;
  for (const SiteModels& s : sites) {
    const Eigen::MatrixXcd h = on_structure(s.influence, specimens(s, omega));
    stiffness += h.real();
    if (omega > 0.0) damping += h.imag() / omega;
  }
}

bool smith(const config::Site& site) {
  const auto mode = site.compensation().mode();
  return mode == config::MODIFIED_SMITH || mode == config::CLASSIC_SMITH;
}

}  // namespace

Complex dynamic_stiffness(const config::Model& model, double omega_rad_s) {
  switch (model.kind_case()) {
    case config::Model::kSpring:
      return {model.spring().stiffness_n_per_m(), 0.0};
    case config::Model::kBoucWen: {
      const config::BoucWenDamper& p = model.bouc_wen();
      const double v = p.voltage_v();
      const double alpha = p.alpha_a_n_per_m() + p.alpha_b_n_per_m_v() * v;
      const double c0 = p.c0a_ns_per_m() + p.c0b_ns_per_m_v() * v;
      const double c1 = p.c1a_ns_per_m() + p.c1b_ns_per_m_v() * v;
      const Complex s(0.0, omega_rad_s);
      const double stiff = alpha * p.a() + p.k0_n_per_m();
      const Complex y_over_x = (stiff + c0 * s) / (stiff + (c0 + c1) * s);
      return p.k1_n_per_m() + c1 * s * y_over_x;
    }
    case config::Model::KIND_NOT_SET:
      break;
  }
  throw std::invalid_argument("a channel model without a kind (expected spring or bouc_wen)");
}

std::vector<SiteMode> reduce(const config::Experiment& experiment, int modes) {
  const StructuralModel structure = make_structure(experiment.structure());
  const Eigen::Index dofs = structure.dofs();
  std::vector<SiteModels> sites;
  for (const config::Site& site : experiment.site()) {
    SiteModels s{&site,
                 Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
                     site.influence().data(), dofs, site.channel_size()),
                 {}};
    for (const config::Channel& c : site.channel()) {
      s.channels.push_back({c.specimen(), c.has_prediction() ? c.prediction() : c.specimen()});
    }
    sites.push_back(std::move(s));
  }
  const int count = modes <= 0 ? static_cast<int>(dofs) : std::min(modes, static_cast<int>(dofs));
  std::vector<SiteMode> out;
  for (int i = 0; i < count; ++i) {
    // The mode's frequency: where the specimens' dynamic stiffness at it gives it back.
    Eigen::MatrixXd stiffness;
    Eigen::MatrixXd damping;
    double omega = 0.0;
    Eigen::VectorXd phi;
    for (int it = 0; it < kMaxIterations; ++it) {
      reference_at(structure, sites, omega, stiffness, damping);
      const Eigen::GeneralizedSelfAdjointEigenSolver<Eigen::MatrixXd> eig(stiffness, structure.mass);
      if (eig.info() != Eigen::Success || !(eig.eigenvalues()(i) > 0.0)) {
        throw std::invalid_argument(fmt::format(
            "the reference structure (numerical substructure and specimens) has no positive frequency at mode {}",
            i + 1));
      }
      const double next = std::sqrt(eig.eigenvalues()(i));
      phi = eig.eigenvectors().col(i);
      const bool settled = std::abs(next - omega) <= kFrequencyTolerance * next;
      omega = next;
      if (settled) break;
    }
    reference_at(structure, sites, omega, stiffness, damping);
    const double modal_mass = phi.dot(structure.mass * phi);
    const double modal_stiffness = phi.dot(stiffness * phi);
    const double modal_damping = phi.dot(damping * phi);
    const double zeta = modal_damping / (2.0 * omega * modal_mass);
    for (const SiteModels& s : sites) {
      if (s.site->placement() != config::REMOTE) continue;  // in process: nothing delays its force
      const Eigen::MatrixXcd delayed = on_structure(s.influence, specimens(s, omega));
      const Complex projected = phi.cast<Complex>().dot(delayed * phi.cast<Complex>());
      SiteMode m;
      m.site = s.site->name();
      m.mode = i + 1;
      m.reference = stability::Partition{1.0, 1.0 - projected.imag() / omega / modal_damping,
                                         1.0 - projected.real() / modal_stiffness, zeta, omega};
      m.smith = smith(*s.site);
      m.loop = m.reference;
      if (m.smith) {
        const Eigen::MatrixXcd error = on_structure(s.influence, errors(s, omega));
        const Complex left = phi.cast<Complex>().dot(error * phi.cast<Complex>());
        m.loop.beta = 1.0 - left.imag() / omega / modal_damping;
        m.loop.gamma = 1.0 - left.real() / modal_stiffness;
        m.model_error = projected == Complex{} ? Complex{} : -left / projected;
      }
      out.push_back(m);
    }
  }
  return out;
}

stability::Partition smith_loop_at(const SiteMode& m, double model_error) {
  return stability::smith_loop_partition(m.reference, stability::ModelError{0.0, model_error, model_error});
}

double round_trip_budget_s(const stability::Partition& loop, double rate_hz, double transfer_delay_s) {
  const stability::Stability s = stability::analyse(loop);
  return stability::allowable_transfer_delay_s(s.tau_cr_s, transfer_delay_s, rate_hz);
}

SiteBudget smith_budget(const std::vector<SiteMode>& modes, const std::string& site, double model_error, double rate_hz,
                        double transfer_delay_s) {
  SiteBudget b{site, std::numeric_limits<double>::infinity(), 0};
  for (const SiteMode& m : modes) {
    if (m.site != site) continue;
    for (const double e : {model_error, -model_error}) {
      const stability::Partition loop = m.smith ? smith_loop_at(m, e) : m.reference;
      const double budget = round_trip_budget_s(loop, rate_hz, transfer_delay_s);
      if (budget < b.round_trip_budget_s) {
        b.round_trip_budget_s = budget;
        b.limiting_mode = m.mode;
      }
    }
  }
  return b;
}

}  // namespace rths::plan
