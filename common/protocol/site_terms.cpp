#include "common/protocol/site_terms.hpp"

#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "common/core/digest.hpp"
#include "common/core/text.hpp"

namespace rths {

namespace {

// First `key=value` token that differs between two model descriptions, as a sentence.
std::string model_difference(const std::string& numerical, const std::string& site) {
  const auto a = split_words(numerical);
  const auto b = split_words(site);
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (a[i] == b[i]) {
      continue;
    }
    const auto eq_a = a[i].find('=');
    const auto eq_b = b[i].find('=');
    if (eq_a != std::string::npos && eq_b != std::string::npos && a[i].substr(0, eq_a) == b[i].substr(0, eq_b)) {
      return fmt::format("prediction model differs in {}: {} at the numerical node, {} at the site",
                         a[i].substr(0, eq_a), a[i].substr(eq_a + 1), b[i].substr(eq_b + 1));
    }
    return fmt::format("prediction model differs: '{}' at the numerical node, '{}' at the site", a[i], b[i]);
  }
  return fmt::format("prediction model differs: '{}' at the numerical node, '{}' at the site", numerical, site);
}

}  // namespace

wire::SiteTerms site_terms(const config::Experiment& experiment, const config::Site& site,
                           const std::string& model_description) {
  wire::SiteTerms terms;
  terms.set_rate_hz(experiment.rate_hz());
  terms.set_channels(static_cast<std::uint32_t>(site.channel_size()));
  terms.set_site_name(site.name());
  terms.set_compensation(static_cast<std::uint32_t>(site.compensation().mode()));
  terms.set_peer_timeout_s(experiment.realtime().peer_timeout_s());
  terms.set_hold(static_cast<std::uint32_t>(experiment.realtime().hold()));
  terms.set_max_extrapolation_s(experiment.realtime().max_extrapolation_s());
  for (const auto& channel : site.channel()) {
    terms.add_stroke_limit_m(channel.stroke_limit_m());
    terms.add_velocity_limit_m_per_s(channel.velocity_limit_m_per_s());
    terms.add_force_limit_n(channel.force_limit_n());
  }
  terms.set_model_description(model_description);
  terms.set_model_digest(fnv1a(model_description));
  return terms;
}

std::string terms_mismatch(const wire::SiteTerms& numerical, const wire::SiteTerms& site) {
  if (numerical.site_name() != site.site_name()) {
    return fmt::format("site name differs: '{}' at the numerical node, '{}' at the site", numerical.site_name(),
                       site.site_name());
  }
  if (numerical.rate_hz() != site.rate_hz()) {
    return fmt::format("rate_hz differs: {} at the numerical node, {} at the site", numerical.rate_hz(),
                       site.rate_hz());
  }
  if (numerical.channels() != site.channels()) {
    return fmt::format("channels differ: {} at the numerical node, {} at the site", numerical.channels(),
                       site.channels());
  }
  if (numerical.compensation() != site.compensation()) {
    return fmt::format("compensation mode differs: {} at the numerical node, {} at the site",
                       config::CompensationMode_Name(static_cast<config::CompensationMode>(numerical.compensation())),
                       config::CompensationMode_Name(static_cast<config::CompensationMode>(site.compensation())));
  }
  using Limits = google::protobuf::RepeatedField<double>;
  const auto limit_mismatch = [](const char* name, const Limits& a, const Limits& b) -> std::string {
    if (a.size() != b.size()) {
      return fmt::format("{} differs: {} channels at the numerical node, {} at the site", name, a.size(), b.size());
    }
    for (int c = 0; c < a.size(); ++c) {
      if (a[c] != b[c]) {
        return fmt::format("channel {} {} differs: {} at the numerical node, {} at the site (0: none)", c + 1, name,
                           a[c], b[c]);
      }
    }
    return {};
  };
  for (auto [name, a, b] :
       {std::tuple{"stroke_limit_m", &numerical.stroke_limit_m(), &site.stroke_limit_m()},
        std::tuple{"velocity_limit_m_per_s", &numerical.velocity_limit_m_per_s(), &site.velocity_limit_m_per_s()},
        std::tuple{"force_limit_n", &numerical.force_limit_n(), &site.force_limit_n()}}) {
    if (std::string why = limit_mismatch(name, *a, *b); !why.empty()) {
      return why;
    }
  }
  if (numerical.peer_timeout_s() != site.peer_timeout_s()) {
    return fmt::format("realtime.peer_timeout_s differs: {} at the numerical node, {} at the site",
                       numerical.peer_timeout_s(), site.peer_timeout_s());
  }
  if (numerical.hold() != site.hold() || numerical.max_extrapolation_s() != site.max_extrapolation_s()) {
    return fmt::format(
        "realtime.hold differs: {} (max_extrapolation_s {}) at the numerical node, {} ({}) at the site",
        config::HoldPolicy_Name(static_cast<config::HoldPolicy>(numerical.hold())), numerical.max_extrapolation_s(),
        config::HoldPolicy_Name(static_cast<config::HoldPolicy>(site.hold())), site.max_extrapolation_s());
  }
  if (numerical.model_digest() != site.model_digest()) {
    return model_difference(numerical.model_description(), site.model_description());
  }
  return {};
}

}  // namespace rths
