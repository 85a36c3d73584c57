#pragma once

#include <complex>
#include <optional>
#include <string>
#include <vector>

#include "common/dynamics/stability_switch.hpp"
#include "experiment.pb.h"

namespace rths::plan {

// The stability planning of an experiment (docs/stability.md): for each remote site and each mode of
// the reference structure, the equivalent SDOF partition of seed 004 and the loop the site's Smith
// predictor leaves, from which the critical delays and the delay budget follow.
//
// The reduction. The reference structure is the numerical substructure (M, C, K of the config) with
// every site's specimens linearised at a frequency w into a dynamic stiffness H(jw) = k + j w c per
// channel (each model gives its own: PredictionModel::dynamic_stiffness) and added through the
// influence matrices: K_ref = K + sum_s Lambda_s Re H_s Lambda_s^T, C_ref = C + sum_s Lambda_s
// (Im H_s / w) Lambda_s^T (the specimens carry no mass). Mode i is an
// eigenpair (w_i, phi_i) of K_ref phi = w^2 M phi, w_i found by fixed-point iteration where H depends
// on w. Projected on phi_i (Chopra, Dynamics of Structures, 4th ed., ch. 10 and 12: the modal
// equations of a classically damped system), the structure is the SDOF M_i x'' + C_i x' + K_i x with
// M_i = phi^T M phi, C_i = phi^T C_ref phi, K_i = phi^T K_ref phi = w_i^2 M_i, zeta_i = C_i / (2 w_i M_i).
// Site s's delayed part projects the same way, K_p = phi^T Lambda_s Re H_s Lambda_s^T phi, and
// alpha = 1, beta = 1 - C_p / C_i, gamma = 1 - K_p / K_i. This is exact when the delayed part does not
// couple the modes (a single mode dominates, or the partition is proportional) and an approximation
// otherwise; the other sites' forces count as undelayed.
//
// The Smith loop: a modified (or classic) Smith predictor adds its prediction model's force at once
// and the measured model error late (seed 002 Eq. 5), so the delayed part is H_specimen - H_model,
// the undelayed part the numerical substructure plus the model; the zero-delay structure is the
// reference itself (stability::smith_loop_partition).

struct SiteMode {
  std::string site;
  int mode = 0;                    // from 1, ascending frequency
  stability::Partition reference;  // the site's specimen force delayed as a whole
  stability::Partition loop;       // what the site's compensation leaves delayed (reference without one)
  bool smith = false;              // the site has a Smith predictor (MODIFIED_SMITH or CLASSIC_SMITH)
  // The prediction model's error at the mode, relative to the specimen's dynamic stiffness there:
  // (H_model - H_specimen) / H_specimen (0 without a Smith predictor).
  std::complex<double> model_error{0.0, 0.0};
};

// Every remote site (REMOTE placement) at every mode (modes: the lowest n; 0: all). Throws
// std::invalid_argument for a site without a channel model this reduction knows, or a reference
// structure without positive frequencies.
std::vector<SiteMode> reduce(const config::Experiment& experiment, int modes = 0);

// The loop a site's Smith predictor leaves at a mode when its model is off by a relative error e
// (the model's dynamic stiffness (1 + e) times the specimen's).
stability::Partition smith_loop_at(const SiteMode& m, double model_error);

// What a site's link may add to the loop: the critical delay less the zero-order hold (1 / (2 f_s),
// seed 004 Eq. 32) and the transfer system's own delay; negative: nothing.
double round_trip_budget_s(const stability::Partition& loop, double rate_hz, double transfer_delay_s);

// The critical delay of a site's loop on the whole structure, every DOF, no modal truncation: the
// mode-by-mode partitions above drop the coupling a site's force gives the modes (for the seed 002
// spring case 5-10 % of the critical delay, measured against virtual-time runs), this does not. The
// undelayed dynamic stiffness is A(w) = K - w^2 M + jw C + the other sites' specimens (counted as
// undelayed) + Lambda_s H_model Lambda_s^T e^{-jw h}, h = 1 / (2 f_s) (the model's force is held over
// the step as the error's is); the delayed part is Lambda_s H_d Lambda_s^T with H_d = H_specimen -
// H_model (the whole specimen without a Smith predictor). As det(A + Lambda H_d Lambda^T e^{-jw tau})
// = det A det(I + G(w) e^{-jw tau}), G = H_d Lambda^T A^-1 Lambda (channels x channels), a root
// crosses the imaginary axis at a w where an eigenvalue mu of G has |mu| = 1, at the delays tau =
// (arg(-mu) + 2 pi N) / w: the smallest is the critical delay (the delay of the error force, its own
// hold included). Found by a sweep of w up to 8 times the highest natural frequency (G falls as 1 / w
// or faster beyond) with bisection of each crossing.
struct LoopCritical {
  double tau_cr_s = 0.0;     // infinity: no delay destabilises the loop
  double omega_rad_s = 0.0;  // where the roots cross
};
// model_error: the model (1 + e) times the specimen; absent: the config's own prediction models. A
// site without a Smith predictor delays its whole specimen force whatever e is.
LoopCritical critical_loop_delay(const config::Experiment& experiment, const std::string& site,
                                 std::optional<double> model_error = std::nullopt);

// What the network may add to a loop whose critical delay is known: the budget of seed 004 Eq. 32
// (stability::allowable_transfer_delay_s), the zero-order hold and the transfer delay taken off.
double round_trip_budget_s(const LoopCritical& loop, double rate_hz, double transfer_delay_s);

// The site's mode whose natural frequency is nearest (in ratio) to a crossing frequency; 0 when
// there is none (no crossing, or the site is not remote).
int nearest_mode(const config::Experiment& experiment, const std::string& site, double omega_rad_s);

// A site's round-trip budget for a stated model error (both signs taken: the smaller budget), as the
// run-time guard plans it: the whole loop's critical delay, less the zero-order hold and the
// transfer delay. limiting_mode names the mode nearest the loop's crossing frequency (0 when
// nothing limits).
struct SiteBudget {
  std::string site;
  double round_trip_budget_s = 0.0;  // infinity: delay-independent
  int limiting_mode = 0;
};
SiteBudget smith_budget(const config::Experiment& experiment, const std::string& site, double model_error,
                        double transfer_delay_s);

}  // namespace rths::plan
