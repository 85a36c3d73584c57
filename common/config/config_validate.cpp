// What a parsed experiment must mean before anything is built from it. Every problem is one line
// that names the field, where it was written and what was expected ("Errors that teach"); all of
// a config's problems are reported in one run (Problems, Checker), and the run must not find out
// halfway through.
//
// The rules of the structure are in structure_checks.cpp and those of a site in site_checks.cpp (their
// entries in config_checks.hpp), a setup's in setup_checks.cpp; each component's are its own, asked
// through the registry (check_component). What stays here are the rules across them.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/config/config.hpp"
#include "common/core/address.hpp"
#include "common/core/component_registry.hpp"
#include "common/core/problems.hpp"
#include "common/transport/link.hpp"
#include "config_checks.hpp"

namespace rths {
namespace {

namespace pb = google::protobuf;
using pb::FieldDescriptor;
using validation::check_reduction;
using validation::check_site;
using validation::check_structure;
using validation::child;
using validation::element;

// Step rates above this are beyond any actuator loop the middleware serves (docs/architecture.md §3 runs 1 kHz).
constexpr double kMaxRateHz = 100e3;
// Real-time bounds (proto/realtime.proto, Realtime). A peer silent for longer than 10 s is lost for
// any network a test runs over, and the actuators wait that long holding; a timeout below two steps
// would end a test on one late packet.
constexpr double kMaxPeerTimeoutS = 10.0;
constexpr double kMinPeerTimeoutSteps = 2.0;
// The numerical node says hello every 0.1 s: a shorter handshake timeout gives a site one chance. Ten
// minutes is time enough to start the sites by hand.
constexpr double kMinHandshakeTimeoutS = 0.1;
constexpr double kMaxHandshakeTimeoutS = 600.0;
constexpr double kMaxStartDelayS = 10.0;  // a site's start ramp ends within it (site_checks.cpp)

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

std::string too_long(std::string_view name) {
  return fmt::format(
      "\"{}\" is {} bytes long; expected at most {} (it becomes part of file names, which may have "
      "255 bytes)",
      shortened(name, 40), name.size(), kMaxNameBytes);
}

}  // namespace

namespace validation {

// Why a DOF's or a spring's name cannot head CSV columns and be part of a file name (response_DOF.png,
// spring_NAME_loop.png); empty when it can.
std::string column_name_problem(std::string_view name) {
  const auto* const bad = std::find_if(name.begin(), name.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return c == ',' || c == '"' || c == '/' || u < 0x20 || u == 0x7f;
  });
  if (bad != name.end()) {
    return fmt::format(
        "\"{}\" contains '{}'; expected a name usable as a CSV column and in a file name (no comma, "
        "quote, '/' or control character)",
        shortened(name), *bad);
  }
  return name.size() > kMaxNameBytes ? too_long(name) : std::string{};
}

}  // namespace validation

namespace {

// NaN compares false with everything, so a NaN would slip through every range check below; one
// walk over all the doubles of the message rules non-finite numbers out first.
void check_finite(const pb::Message& message, const std::string& path, const Checker& check) {
  const auto* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const auto* field : fields) {
    const std::string field_path = child(path, field->name());
    const int count = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
    for (int i = 0; i < count; ++i) {
      const auto at = [&] { return field->is_repeated() ? element(field_path, i) : field_path; };
      double value = 0;
      switch (field->cpp_type()) {
        case FieldDescriptor::CPPTYPE_DOUBLE:
          value = field->is_repeated() ? reflection->GetRepeatedDouble(message, field, i)
                                       : reflection->GetDouble(message, field);
          break;
        case FieldDescriptor::CPPTYPE_FLOAT:
          value = field->is_repeated() ? reflection->GetRepeatedFloat(message, field, i)
                                       : reflection->GetFloat(message, field);
          break;
        case FieldDescriptor::CPPTYPE_MESSAGE:
          check_finite(field->is_repeated() ? reflection->GetRepeatedMessage(message, field, i)
                                            : reflection->GetMessage(message, field),
                       at(), check);
          continue;
        default:
          continue;
      }
      if (!std::isfinite(value)) check.fail(at(), fmt::format("is {}, expected a finite number", value));
    }
  }
}

// The ground motion's source, by the rules registered for it (common/ground_motions/).
void check_ground_motion(const config::Experiment& experiment, const Checker& check) {
  const ComponentContext context{.rate_hz = experiment.rate_hz(), .experiment = &experiment};
  if (!check_component(experiment.ground_motion(), "source", context, check.at("ground_motion"))) {
    check.fail("ground_motion", "has no source; expected record { path: \"...\" unit: G } or synthetic { ... }");
  }
}

// Two remote sites at one address would be one site to the network: the numerical node's packets for
// both reach one rths-physical. Compared as written (same_endpoint: no resolver here); sites that
// both leave the address at its default are left to the real-time run, which compares the resolved
// addresses (a virtual-time run does not use them).
void check_distinct_addresses(const config::Experiment& experiment, const Checker& check) {
  std::vector<std::pair<int, HostPort>> seen;
  for (int i = 0; i < experiment.site_size(); ++i) {
    const config::Site& site = experiment.site(i);
    if (site.placement() != config::REMOTE) continue;
    HostPort at = parse_host_port(site.address());  // checked by check_site
    for (const auto& [other, where] : seen) {
      if (!same_endpoint(where, at)) continue;
      if (!site.has_address() && !experiment.site(other).has_address()) continue;
      check.fail(child(element("site", i), "address"),
                 fmt::format("\"{}\" is also site[{}]'s (\"{}\"); expected one address per site: each site's "
                             "rths-physical listens on its own port",
                             site.address(), other, experiment.site(other).name()));
    }
    seen.emplace_back(i, std::move(at));
  }
}

void check_realtime(const config::Realtime& rt, double rate_hz, const Checker& check) {
  const double min_peer_timeout_s = kMinPeerTimeoutSteps / rate_hz;
  check.require(rt.peer_timeout_s() >= min_peer_timeout_s && rt.peer_timeout_s() <= kMaxPeerTimeoutS,
                "realtime.peer_timeout_s",
                fmt::format("is {:g}, expected a timeout from {:g} steps ({:g} s at {:g} Hz) to {:g} s (a silent "
                            "peer ends the test after it)",
                            rt.peer_timeout_s(), kMinPeerTimeoutSteps, min_peer_timeout_s, rate_hz, kMaxPeerTimeoutS));
  check.require(rt.priority() >= 0 && rt.priority() <= 99, "realtime.priority",
                fmt::format("is {}, expected 0 (normal scheduling) or a SCHED_FIFO priority 1..99", rt.priority()));
  check.require(rt.spin_s() >= 0 && rt.spin_s() < 0.01, "realtime.spin_s",
                fmt::format("is {}, expected a busy-wait >= 0 and well below a period (s)", rt.spin_s()));
  check.require(rt.cpu() >= -1, "realtime.cpu", fmt::format("is {}, expected a CPU number or -1 (any)", rt.cpu()));
  check.require(rt.handshake_timeout_s() >= kMinHandshakeTimeoutS && rt.handshake_timeout_s() <= kMaxHandshakeTimeoutS,
                "realtime.handshake_timeout_s",
                fmt::format("is {:g}, expected {:g} to {:g} s (the hello is repeated every 0.1 s)",
                            rt.handshake_timeout_s(), kMinHandshakeTimeoutS, kMaxHandshakeTimeoutS));
  check.require(rt.start_delay_s() >= 0 && rt.start_delay_s() <= kMaxStartDelayS, "realtime.start_delay_s",
                fmt::format("is {:g}, expected 0 to {:g} s", rt.start_delay_s(), kMaxStartDelayS));
}
// What can be told of the keys before a real-time run (site_key() checks the files themselves).
void check_keys_and_hold(const config::Experiment& experiment, const Checker& check) {
  for (int i = 0; i < experiment.site_size(); ++i) {
    const auto& site = experiment.site(i);
    if (site.has_key_file()) {
      check.require(!site.key_file().empty(), child(element("site", i), "key_file"),
                    "is empty; expected the path of the site's key file (rths-numerical keygen FILE)");
    }
  }
  const double extrapolation = experiment.realtime().max_extrapolation_s();
  check.require(extrapolation > 0 && extrapolation <= 1.0, "realtime.max_extrapolation_s",
                fmt::format("is {}, expected > 0 and <= 1 s (a site extrapolates a held target at most this long)",
                            extrapolation));
}
// The config oneofs whose members are registered components: validation walks into them by their
// rules. A program that validates configs without every component's library linked (whole) would
// pass what it cannot check: it stops at its first config instead.
void require_registered_components() {
  static std::once_flag checked;
  std::call_once(checked, [] {
    const std::array<std::pair<const pb::Descriptor*, std::string_view>, 11> oneofs{{
        {config::Controller::descriptor(), "kind"},
        {config::SiteController::descriptor(), "kind"},
        {config::ActuatorPlant::descriptor(), "kind"},
        {config::Driver::descriptor(), "kind"},
        {config::Model::descriptor(), "kind"},
        {config::SetupTransform::descriptor(), "kind"},
        {config::Actuator::descriptor(), "dynamics"},
        {config::GroundMotion::descriptor(), "source"},
        {config::Impairment::descriptor(), "jitter_model"},
        {config::Loss::descriptor(), "model"},
        {config::Structure::descriptor(), "damping"},
    }};
    for (const auto& [holder, oneof] : oneofs) {
      for (const pb::FieldDescriptor* member : registry::members(*holder, oneof)) {
        if (!has_member_rules(*member)) registry::unregistered(*member, "component");
      }
    }
  });
}

}  // namespace

std::string site_name_problem(std::string_view name) {
  constexpr std::string_view kNameRule =
      "letters, digits, '_' or '-' (it becomes a CSV column suffix and part of file names)";
  if (name.empty()) return fmt::format("missing; expected a name of {}", kNameRule);
  if (const auto* const bad = std::find_if_not(name.begin(), name.end(), is_name_char); bad != name.end()) {
    return fmt::format("\"{}\" contains '{}'; expected only {}", shortened(name), *bad, kNameRule);
  }
  return name.size() > kMaxNameBytes ? too_long(name) : std::string{};
}

void validate(const config::Experiment& experiment, const std::string& source_name, const FieldLocations* where) {
  require_registered_components();
  Problems problems(source_name, where);
  const Checker check(problems);
  // A number that is not finite makes every rule about it meaningless: those problems alone.
  if (!check.section([&] { check_finite(experiment, "", check); })) problems.throw_if_any();

  // Sections whose rules stand alone, each reported; a section that others rely on (the step rate,
  // the structure, every site) is checked first and the dependent ones only when it passed.
  const bool rate_ok =
      check.expect(experiment.rate_hz() > 0 && experiment.rate_hz() <= kMaxRateHz, "rate_hz",
                   fmt::format("is {}, expected a step rate > 0 and <= {} Hz", experiment.rate_hz(), kMaxRateHz));
  check.expect(experiment.duration_s() >= 0, "duration_s",
               fmt::format("is {}, expected >= 0 s (0 runs to the end of the ground motion)", experiment.duration_s()));
  const bool structure_ok = check.section([&] {
    check.require(experiment.has_structure(), "structure",
                  "missing; expected structure { dofs: ... mass_kg: [...] stiffness_n_per_m: [...] }");
    check_structure(experiment.structure(), experiment.integrator(), check);
  });
  const bool alpha_integrator =
      experiment.integrator() == config::KR_ALPHA || experiment.integrator() == config::GENERALIZED_ALPHA;
  check.expect(!experiment.has_rho_infinity() || alpha_integrator, "rho_infinity",
               fmt::format("is set, but integrator {} takes no rho_infinity; expected integrator: KR_ALPHA or "
                           "GENERALIZED_ALPHA, or no rho_infinity",
                           config::Integrator_Name(experiment.integrator())));
  check.expect(experiment.rho_infinity() >= 0.0 && experiment.rho_infinity() <= 1.0, "rho_infinity",
               fmt::format("is {}, expected a spectral radius from 0 (the high modes damped out) to 1 (no numerical "
                           "damping)",
                           experiment.rho_infinity()));

  check.section([&] {
    check.require(
        experiment.has_ground_motion(), "ground_motion",
        "missing; expected ground_motion { record { path: \"...\" unit: G } } or ground_motion { synthetic { } }");
    check_ground_motion(experiment, check);
  });

  const bool some_site = check.expect(
      experiment.site_size() >= 1, "site",
      "missing; expected at least one site { name: \"...\" influence: [...] channel { specimen { ... } } }");
  if (rate_ok && structure_ok && some_site) {
    bool sites_ok = true;
    for (int i = 0; i < experiment.site_size(); ++i) {
      sites_ok = check.section([&] { check_site(experiment, i, check); }) && sites_ok;
    }
    if (sites_ok) {
      check.section([&] { check_distinct_addresses(experiment, check); });
      if (experiment.structure().has_reduction()) check.section([&] { check_reduction(experiment, check); });
    }
  }
  check.section([&] { check_keys_and_hold(experiment, check); });
  if (rate_ok) check.section([&] { check_realtime(experiment.realtime(), experiment.rate_hz(), check); });
  check.expect(experiment.output().memory_budget_mb() > 0, "output.memory_budget_mb",
               fmt::format("is {:g}, expected a memory budget > 0 MB for the run's records",
                           experiment.output().memory_budget_mb()));
  problems.throw_if_any();
}

}  // namespace rths
