// The maRTHS benchmark's control plant as a simulated plant driver (seed 000 §2.5, §2.10; seed 001
// Table 1; the benchmark package's fcn_build_uncert_plant.m for how its uncertainty is drawn).
#include "node_physical/plants/two_actuator_frame_plant.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <utility>

#include "common/dynamics/linear_system.hpp"

namespace rths {

namespace {

// A step length must match the rate the plant was discretised at to this relative precision (as
// LinearActuator's).
constexpr double kDtTolerance = 1e-9;

// The uncertainty's stream of its seed (stream_seed): not 0 or 1, the noise streams of actuators 0
// and 1, so equal seeds for noise and uncertainty (both default to 1) draw independent numbers.
constexpr std::uint64_t kUncertaintyStream = 0x66'72'61'6d'65ULL;  // "frame"

// The factor 1 + sd n of one root (or of the frame pole's two), drawn again while it is not above 0.
double draw_factor(Rng& rng, double sd) {
  // Each attempt succeeds with probability P(n > -1/sd) > 1/2: the loop ends.
  for (;;) {
    const double factor = 1.0 + sd * rng.normal();
    if (factor > 0.0) return factor;
  }
}

// Column 0's or 1's chain of sections (the class comment): continuous A, B and the two output rows.
struct Chain {
  Eigen::Matrix4d a = Eigen::Matrix4d::Zero();
  Eigen::Vector4d b = Eigen::Vector4d::Zero();
  Eigen::Matrix<double, 2, 4> c = Eigen::Matrix<double, 2, 4>::Zero();
};

// States [f, g, .., ..]: the frame's unit-static-gain second-order section driven by the column's
// command, f its output and g = f' / wn (both of the command's size).
void frame_section(const FramePlantModel& m, Chain& chain) {
  const double c1 = m.theta[FramePlantModel::kC1];
  const double c2 = m.theta[FramePlantModel::kC2];
  const double wn = std::hypot(c1, c2);
  chain.a(0, 1) = wn;
  chain.a(1, 0) = -wn;
  chain.a(1, 1) = -2.0 * c1;
  chain.b(1) = wn;
}

// Column 0: f -> (a1, b1) lead-lag, state z1 -> (a2, b2) lead-lag, state z2 -> y, each lead-lag
// (a/b)(s + b)/(s + a) as z' = -a z + a in, out = (a/b) in + (1 - a/b) z.
Chain column0_chain(const FramePlantModel& m) {
  Chain chain;
  frame_section(m, chain);
  const double a1 = m.theta[FramePlantModel::kA1];
  const double b1 = m.theta[FramePlantModel::kB1];
  const double a2 = m.theta[FramePlantModel::kA2];
  const double b2 = m.theta[FramePlantModel::kB2];
  // out1 = r1 f + (1 - r1) z1 as a row over the states.
  const double r1 = a1 / b1;
  const double r2 = a2 / b2;
  Eigen::RowVector4d out1(r1, 0.0, 1.0 - r1, 0.0);
  chain.a(2, 0) = a1;
  chain.a(2, 2) = -a1;
  chain.a.row(3) = a2 * out1;
  chain.a(3, 3) -= a2;
  Eigen::RowVector4d y = r2 * out1;
  y(3) += 1.0 - r2;
  chain.c.row(0) = m.static_gain(0, 0) * y;
  chain.c.row(1) = m.static_gain(1, 0) * y;
  return chain;
}

// Column 1: f -> d1/(s + d1), state v -> d2/(s + d2), state w; actuator i's stroke H_i1(0) (s +
// p_i)/p_i w = H_i1(0) (w + w' / p_i), w' = d2 (v - w).
Chain column1_chain(const FramePlantModel& m) {
  Chain chain;
  frame_section(m, chain);
  const double d1 = m.theta[FramePlantModel::kD1];
  const double d2 = m.theta[FramePlantModel::kD2];
  chain.a(2, 0) = d1;
  chain.a(2, 2) = -d1;
  chain.a(3, 2) = d2;
  chain.a(3, 3) = -d2;
  const std::array<double, 2> zeros{m.theta[FramePlantModel::kP1], m.theta[FramePlantModel::kP2]};
  for (int i = 0; i < 2; ++i) {
    const double slope = d2 / zeros[static_cast<std::size_t>(i)];
    chain.c.row(i) = m.static_gain(i, 1) * Eigen::RowVector4d(0.0, 0.0, slope, 1.0 - slope);
  }
  return chain;
}

}  // namespace

FramePlantModel draw_uncertain(const FramePlantModel& nominal, const config::PlantUncertainty& uncertainty) {
  using M = FramePlantModel;
  Rng rng(stream_seed(uncertainty.seed(), kUncertaintyStream));
  FramePlantModel drawn = nominal;
  const auto scale = [&](M::Root root, double sd) { drawn.theta[root] *= draw_factor(rng, sd); };
  scale(M::kA1, uncertainty.column1_pole_sd());
  scale(M::kA2, uncertainty.column1_pole_sd());
  scale(M::kB1, uncertainty.column1_zero_sd());
  scale(M::kB2, uncertainty.column1_zero_sd());
  const double frame = draw_factor(rng, uncertainty.frame_pole_sd());
  drawn.theta[M::kC1] *= frame;
  drawn.theta[M::kC2] *= frame;
  scale(M::kP1, uncertainty.column2_sd());
  scale(M::kP2, uncertainty.column2_sd());
  scale(M::kD1, uncertainty.column2_sd());
  scale(M::kD2, uncertainty.column2_sd());

  // H_ij(0) is linear in its gain: one ratio puts it back on the nominal's.
  const std::array<std::pair<int, int>, M::kGains> entries{{{0, 0}, {1, 0}, {0, 1}, {1, 1}}};
  for (std::size_t g = 0; g < entries.size(); ++g) {
    const auto [i, j] = entries[g];
    drawn.gain[g] *= nominal.static_gain(i, j) / drawn.static_gain(i, j);
  }
  return drawn;
}

TwoActuatorFramePlant::TwoActuatorFramePlant(const FramePlantModel& model, const config::SensorNoise& noise,
                                             double rate_hz, std::uint64_t uncertainty_seed, bool common_noise)
    : model_(model),
      noise_(noise),
      common_noise_(common_noise),
      dt_s_(1.0 / rate_hz),
      uncertainty_seed_(uncertainty_seed),
      noise_streams_{Rng(stream_seed(noise.seed(), 0)), Rng(stream_seed(noise.seed(), 1))} {
  build_columns();
}

void TwoActuatorFramePlant::build_columns() {
  const std::array<Chain, 2> chains{column0_chain(model_), column1_chain(model_)};
  for (std::size_t j = 0; j < chains.size(); ++j) {
    const Chain& chain = chains[j];
    ContinuousStateSpace siso;
    siso.a = chain.a;
    siso.b = chain.b;
    siso.c = chain.c.row(0);  // unused by the hold; both rows are kept below
    const DiscreteStateSpace held = zero_order_hold(siso, dt_s_);
    Column& column = columns_[j];
    column.a_d = held.a;
    column.b_d = held.b;
    column.c = chain.c;
    column.c_rate = chain.c * chain.a;
    column.x.setZero();
  }
}

bool TwoActuatorFramePlant::exchange(std::span<const InterfaceMotion> commands, std::span<Measurement> measured,
                                     double dt_s) {
  if (commands.size() != 2 || measured.size() != 2) {
    fault_ = Fault::kSpans;
    fault_value_ = static_cast<double>(commands.size() != 2 ? commands.size() : measured.size());
    return false;
  }
  const auto fail = [&](Fault fault, std::size_t actuator, double value) {
    fault_ = fault;
    fault_actuator_ = actuator;
    fault_value_ = value;
    measured[0] = last_[0];
    measured[1] = last_[1];
    return false;
  };
  if (!(std::abs(dt_s - dt_s_) <= kDtTolerance * dt_s_)) return fail(Fault::kStep, 0, dt_s);  // NaN too
  for (std::size_t j = 0; j < 2; ++j) {
    if (!std::isfinite(commands[j].displacement_m)) return fail(Fault::kCommand, j, commands[j].displacement_m);
  }

  // The tick's reading: the state the earlier steps left, before this step's commands act.
  const Eigen::Vector2d stroke = columns_[0].c * columns_[0].x + columns_[1].c * columns_[1].x;
  const Eigen::Vector2d rate = columns_[0].c_rate * columns_[0].x + columns_[1].c_rate * columns_[1].x;
  const double sd = noise_.displacement_sd_m();
  const double shared = sd > 0.0 && common_noise_ ? sd * noise_streams_[0].normal() : 0.0;
  for (std::size_t i = 0; i < 2; ++i) {
    const auto row = static_cast<Eigen::Index>(i);
    Measurement reading;
    const double own = sd > 0.0 && !common_noise_ ? sd * noise_streams_[i].normal() : 0.0;
    reading.displacement_m = stroke(row) + shared + own;
    reading.velocity_m_per_s = rate(row);
    reading.force_n = 0.0;
    measured[i] = reading;
    last_[i] = reading;
  }
  // Then the step, each command held over it.
  for (std::size_t j = 0; j < 2; ++j) {
    Column& column = columns_[j];
    column.x = column.a_d * column.x + column.b_d * commands[j].displacement_m;
  }
  return true;
}

std::string TwoActuatorFramePlant::fault() const {
  switch (fault_) {
    case Fault::kNone:
      return {};
    case Fault::kSpans:
      return fmt::format("two-actuator frame plant: exchanged {} channels, expected 2 (one per actuator)",
                         fault_value_);
    case Fault::kStep:
      return fmt::format("two-actuator frame plant: stepped with dt {} s, discretised at {} s (the site's rate)",
                         fault_value_, dt_s_);
    case Fault::kCommand:
      return fmt::format("two-actuator frame plant: actuator {}'s stroke command is {}, expected a finite value",
                         fault_actuator_, fault_value_);
  }
  return {};
}

void TwoActuatorFramePlant::report(std::size_t /*channel*/, results::PlantReport& out) const {
  auto& plant = *out.mutable_two_actuator_frame();
  plant.clear_theta();
  plant.clear_gain();
  for (const double root : model_.theta) plant.add_theta(root);
  for (const double gain : model_.gain) plant.add_gain(gain);
  plant.set_uncertainty_seed(uncertainty_seed_);
  plant.mutable_noise()->set_displacement_sd_m(noise_.displacement_sd_m());
  plant.mutable_noise()->set_force_sd_n(noise_.force_sd_n());
  plant.mutable_noise()->set_seed(noise_.seed());
  plant.set_common_noise(common_noise_);
}

std::unique_ptr<PlantDriver> make_actuator_plant(const config::ActuatorPlant& plant, double rate_hz) {
  const config::TwoActuatorFramePlant& frame = plant.two_actuator_frame();
  const FramePlantModel nominal = FramePlantModel::from_config(frame);
  const FramePlantModel run = frame.has_uncertainty() ? draw_uncertain(nominal, frame.uncertainty()) : nominal;
  return std::make_unique<TwoActuatorFramePlant>(
      run, plant.noise(), rate_hz, frame.has_uncertainty() ? frame.uncertainty().seed() : 0, plant.common_noise());
}

}  // namespace rths
