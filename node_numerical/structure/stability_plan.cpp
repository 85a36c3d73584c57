// The modal reduction of an experiment to seed 004's SDOF partitions, and the loop a Smith predictor
// leaves (node_numerical/structure/stability_plan.hpp, docs/stability.md).
#include "node_numerical/structure/stability_plan.hpp"
#include "common/dynamics/eigen_problems.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numbers>
#include <stdexcept>

#include <fmt/format.h>
#include <Eigen/Dense>

#include "node_numerical/structure/structure.hpp"
#include "smith_predictor/site_models/site_models.hpp"

namespace rths::plan {
namespace {

using Complex = std::complex<double>;

// The fixed-point iteration of a mode's frequency (the dampers' dynamic stiffness depends on it)
// stops when a step changes it by less than this fraction, or after kMaxIterations.
constexpr double kFrequencyTolerance = 1e-12;
constexpr int kMaxIterations = 200;
// The whole loop's sweep: frequencies up to its top, and bisections of each crossing (2^-60 of a
// grid step, below double precision).
constexpr int kSweepPoints = 40000;
constexpr int kBisections = 60;

// A site channel's models as the reduction needs them: the specimen and the Smith predictor's model,
// built once from the config (each gives its dynamic stiffness, PredictionModel::dynamic_stiffness) and
// shared by the copies of a site's models the critical-delay search makes.
struct ChannelModels {
  std::shared_ptr<const PredictionModel> specimen;
  std::shared_ptr<const PredictionModel> prediction;
};

struct SiteModels {
  const config::Site* site = nullptr;
  Eigen::MatrixXd influence;  // dofs x channels
  std::vector<ChannelModels> channels;
};

// Every site's influence and channel models (the prediction: the specimen's own when not given).
std::vector<SiteModels> site_models(const config::Experiment& experiment, Eigen::Index dofs) {
  std::vector<SiteModels> sites;
  for (const config::Site& site : experiment.site()) {
    SiteModels s{&site,
                 Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
                     site.influence().data(), dofs, site.channel_size()),
                 {}};
    for (const config::Channel& c : site.channel()) {
      if (!c.has_specimen()) {
        // A multi-axial site's force model gives its channels' forces: no model per channel to linearise.
        throw std::invalid_argument(
            fmt::format("site \"{}\" has a channel without a specimen model; stability planning linearises "
                        "each channel's specimen",
                        site.name()));
      }
      std::shared_ptr<const PredictionModel> specimen = make_model(c.specimen());
      std::shared_ptr<const PredictionModel> prediction = c.has_prediction() ? make_model(c.prediction()) : specimen;
      s.channels.push_back({std::move(specimen), std::move(prediction)});
    }
    sites.push_back(std::move(s));
  }
  return sites;
}

// Lambda diag(h) Lambda^T, the channels' dynamic stiffness on the structure's DOFs.
Eigen::MatrixXcd on_structure(const Eigen::MatrixXd& influence, const std::vector<Complex>& h) {
  Eigen::VectorXcd diagonal(static_cast<Eigen::Index>(h.size()));
  for (std::size_t c = 0; c < h.size(); ++c) diagonal(static_cast<Eigen::Index>(c)) = h[c];
  const Eigen::MatrixXcd lambda = influence.cast<Complex>();
  return lambda * diagonal.asDiagonal() * lambda.transpose();
}

std::vector<Complex> specimens(const SiteModels& s, double omega) {
  std::vector<Complex> h;
  h.reserve(s.channels.size());
  for (const auto& c : s.channels) h.push_back(c.specimen->dynamic_stiffness(omega));
  return h;
}

std::vector<Complex> errors(const SiteModels& s, double omega) {
  std::vector<Complex> h;
  h.reserve(s.channels.size());
  for (const auto& c : s.channels) {
    h.push_back(c.specimen->dynamic_stiffness(omega) - c.prediction->dynamic_stiffness(omega));
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

namespace {

// The structure as the planner's dense eigen-analysis needs it: a sparse model densified, up to the size
// a dense analysis can afford.
StructuralModel planned_structure(const config::Experiment& experiment) {
  constexpr Eigen::Index kLargestDense = 2000;
  StructuralModel structure = make_structure(experiment.structure());
  if (!structure.is_sparse()) return structure;
  if (structure.dofs() > kLargestDense) {
    throw std::invalid_argument(
        fmt::format("the structure is a sparse model of {} DOFs; stability planning analyses "
                    "dense models of up to {} DOFs",
                    structure.dofs(), kLargestDense));
  }
  return dense_form(std::move(structure));
}

}  // namespace

std::vector<SiteMode> reduce(const config::Experiment& experiment, int modes) {
  const StructuralModel structure = planned_structure(experiment);
  const Eigen::Index dofs = structure.dofs();
  const std::vector<SiteModels> sites = site_models(experiment, dofs);
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
      const SymmetricEigen eig = generalized_symmetric_eigen(stiffness, structure.mass);
      if (!eig.ok || !(eig.values(i) > 0.0)) {
        throw std::invalid_argument(fmt::format(
            "the reference structure (numerical substructure and specimens) has no positive frequency at mode {}",
            i + 1));
      }
      const double next = std::sqrt(eig.values(i));
      phi = eig.vectors.col(i);
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

LoopCritical critical_loop_delay(const config::Experiment& experiment, const std::string& site_name,
                                 std::optional<double> model_error) {
  const StructuralModel structure = planned_structure(experiment);
  const Eigen::Index dofs = structure.dofs();
  const double hold_s = 0.5 / experiment.rate_hz();
  std::vector<SiteModels> others = site_models(experiment, dofs);
  const auto at =
      std::find_if(others.begin(), others.end(), [&](const SiteModels& m) { return m.site->name() == site_name; });
  if (at == others.end()) throw std::invalid_argument(fmt::format("no site named \"{}\"", site_name));
  const config::Site* site = at->site;
  SiteModels mine = std::move(*at);
  others.erase(at);
  const bool compensated = smith(*site);
  std::vector<Complex> model;
  std::vector<Complex> delayed;
  // The channels' model and delayed dynamic stiffness at w.
  const auto split = [&](double w) {
    model.clear();
    delayed.clear();
    for (const ChannelModels& c : mine.channels) {
      const Complex specimen = c.specimen->dynamic_stiffness(w);
      Complex m{};
      if (compensated) m = model_error ? (1.0 + *model_error) * specimen : c.prediction->dynamic_stiffness(w);
      model.push_back(m);
      delayed.push_back(specimen - m);
    }
  };
  const Eigen::MatrixXcd lambda = mine.influence.cast<Complex>();
  const auto channels = static_cast<Eigen::Index>(mine.channels.size());
  // The eigenvalues of G(w), by descending magnitude.
  const auto loop_gains = [&](double w) {
    split(w);
    Eigen::MatrixXcd a = structure.stiffness.cast<Complex>() - w * w * structure.mass.cast<Complex>() +
                         Complex(0.0, w) * structure.damping.cast<Complex>() +
                         std::polar(1.0, -w * hold_s) * on_structure(mine.influence, model);
    for (const SiteModels& o : others) a += on_structure(o.influence, specimens(o, w));
    Eigen::MatrixXcd g = lambda.transpose() * a.partialPivLu().solve(lambda);
    for (Eigen::Index c = 0; c < channels; ++c) g.row(c) *= delayed[static_cast<std::size_t>(c)];
    Eigen::VectorXcd mu = complex_eigenvalues(g);
    std::sort(mu.begin(), mu.end(), [](const Complex& x, const Complex& y) { return std::abs(x) > std::abs(y); });
    return mu;
  };
  // The sweep's range: 8 times the highest natural frequency of the structure with every specimen
  // (at rest), below Nyquist.
  Eigen::MatrixXd stiffness;
  Eigen::MatrixXd damping;
  std::vector<SiteModels> all = others;
  all.push_back(mine);
  reference_at(structure, all, 0.0, stiffness, damping);
  const double highest = generalized_symmetric_eigen(stiffness, structure.mass, false).values.maxCoeff();
  const double w_max = std::min(8.0 * std::sqrt(std::max(highest, 0.0)), std::numbers::pi * experiment.rate_hz());
  LoopCritical out{std::numeric_limits<double>::infinity(), 0.0};
  Eigen::VectorXcd previous = loop_gains(w_max / kSweepPoints);
  for (int i = 1; i < kSweepPoints; ++i) {
    const double w_lo = w_max * i / kSweepPoints;
    const double w_hi = w_max * (i + 1) / kSweepPoints;
    const Eigen::VectorXcd next = loop_gains(w_hi);
    for (Eigen::Index k = 0; k < channels; ++k) {
      const bool below_lo = std::abs(previous(k)) < 1.0;
      if (below_lo == (std::abs(next(k)) < 1.0)) continue;
      double lo = w_lo;
      double hi = w_hi;
      for (int it = 0; it < kBisections; ++it) {
        const double mid = 0.5 * (lo + hi);
        ((std::abs(loop_gains(mid)(k)) < 1.0) == below_lo ? lo : hi) = mid;
      }
      const double w = 0.5 * (lo + hi);
      const double phase = std::arg(-loop_gains(w)(k));
      const double tau = std::fmod(phase + 2.0 * std::numbers::pi, 2.0 * std::numbers::pi) / w;
      if (tau < out.tau_cr_s) out = LoopCritical{tau, w};
    }
    previous = next;
  }
  return out;
}

SiteBudget smith_budget(const config::Experiment& experiment, const std::string& site, double model_error,
                        double transfer_delay_s) {
  SiteBudget b{site, std::numeric_limits<double>::infinity(), 0};
  double omega = 0.0;
  for (const double e : {model_error, -model_error}) {
    const LoopCritical c = critical_loop_delay(experiment, site, e);
    const double budget = round_trip_budget_s(c, experiment.rate_hz(), transfer_delay_s);
    if (budget < b.round_trip_budget_s) {
      b.round_trip_budget_s = budget;
      omega = c.omega_rad_s;
    }
  }
  b.limiting_mode = std::isfinite(b.round_trip_budget_s) ? nearest_mode(experiment, site, omega) : 0;
  return b;
}

double round_trip_budget_s(const LoopCritical& loop, double rate_hz, double transfer_delay_s) {
  return stability::allowable_transfer_delay_s(loop.tau_cr_s, transfer_delay_s, rate_hz);
}

int nearest_mode(const config::Experiment& experiment, const std::string& site, double omega_rad_s) {
  int mode = 0;
  if (!(omega_rad_s > 0.0)) return mode;
  double nearest = std::numeric_limits<double>::infinity();
  for (const SiteMode& m : reduce(experiment)) {
    if (m.site != site) continue;
    const double d = std::abs(std::log(m.reference.omega_n_rad_per_s / omega_rad_s));
    if (d < nearest) {
      nearest = d;
      mode = m.mode;
    }
  }
  return mode;
}

}  // namespace rths::plan
