// Which frame force models can be built (seed 000 §5.2: the specimen's force from its model): the
// sizes, finite entries, a symmetric stiffness and a condensed block that can be inverted.
#include "common/config/frame_force_checks.hpp"

#include "common/config/matrix_checks.hpp"

#include <Eigen/Core>
#include <Eigen/SVD>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace rths {
namespace {

std::optional<SetupProblem> matrix_problem(const char* field, std::span<const double> values, std::size_t dofs) {
  if (values.size() != dofs * dofs) {
    return SetupProblem{field, fmt::format("has {} entries, expected dofs x dofs = {} x {} = {} (row-major)",
                                           values.size(), dofs, dofs, dofs * dofs)};
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      return SetupProblem{fmt::format("{}[{}]", field, i), fmt::format("is {}, expected a finite number", values[i])};
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<SetupProblem> frame_force_model_problem(std::size_t dofs, std::span<const double> mass_kg,
                                                      std::span<const double> damping_ns_per_m,
                                                      std::span<const double> stiffness_n_per_m, std::size_t channels) {
  if (channels == 0) return SetupProblem{"", "models no interface DOF: the site has no channels"};
  if (dofs < channels) {
    return SetupProblem{"dofs", fmt::format("is {}, expected at least the site's {} channel{} (the model's first "
                                            "DOFs are the channels, the rest are condensed)",
                                            dofs, channels, channels == 1 ? "" : "s")};
  }
  if (auto p = matrix_problem("mass_kg", mass_kg, dofs)) return p;
  if (auto p = matrix_problem("damping_ns_per_m", damping_ns_per_m, dofs)) return p;
  if (auto p = matrix_problem("stiffness_n_per_m", stiffness_n_per_m, dofs)) return p;

  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const RowMajor> k(stiffness_n_per_m.data(), static_cast<Eigen::Index>(dofs),
                                     static_cast<Eigen::Index>(dofs));
  const double largest = k.cwiseAbs().maxCoeff();
  for (Eigen::Index i = 0; i < k.rows(); ++i) {
    for (Eigen::Index j = i + 1; j < k.cols(); ++j) {
      if (std::abs(k(i, j) - k(j, i)) > kSymmetryTolerance * largest) {
        return SetupProblem{"stiffness_n_per_m",
                            fmt::format("is not symmetric: entry ({}, {}) is {}, entry ({}, {}) is {} (row, column "
                                        "from 0; a linear elastic stiffness is symmetric)",
                                        i, j, k(i, j), j, i, k(j, i))};
      }
    }
  }
  if (dofs > channels) {
    const auto c = static_cast<Eigen::Index>(channels);
    const auto o = static_cast<Eigen::Index>(dofs - channels);
    const Eigen::JacobiSVD<Eigen::MatrixXd> svd(k.bottomRightCorner(o, o));
    const auto& s = svd.singularValues();
    if (!(s(o - 1) > kSetupRankTolerance * s(0))) {
      return SetupProblem{"stiffness_n_per_m",
                          fmt::format("has a singular block of the condensed DOFs (rows and columns {} to {} from 0; "
                                      "singular values {} to {}): the condensation o = -Koo^-1 Kot t needs it "
                                      "invertible, so every condensed DOF must be restrained by the others",
                                      c, dofs - 1, s(0), s(o - 1))};
    }
  }
  return std::nullopt;
}

std::optional<SetupProblem> frame_force_model_problem(const config::FrameForceModel& model, std::size_t channels) {
  if (!model.has_dofs()) return SetupProblem{"dofs", "is missing, expected the model's number of DOFs"};
  const auto values = [](const google::protobuf::RepeatedField<double>& field) {
    return std::span<const double>(field.data(), static_cast<std::size_t>(field.size()));
  };
  return frame_force_model_problem(model.dofs(), values(model.mass_kg()), values(model.damping_ns_per_m()),
                                   values(model.stiffness_n_per_m()), channels);
}

}  // namespace rths
