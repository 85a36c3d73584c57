// What both ends of a link derive from their configs (common/protocol/site_terms.hpp) with the models' text
// from the Smith predictor (describe_site_models), built once for both nodes.
#include <gtest/gtest.h>

#include <string>

#include "common/core/digest.hpp"
#include "common/protocol/site_terms.hpp"
#include "smith_predictor/site_models/site_models.hpp"
#include "support/test_support.hpp"

namespace rths::test_site_terms {
namespace {

TEST(SiteTerms, TheDigestIsOverEachChannelsPredictionModelOrItsSpecimen) {
  LoadedConfig loaded = test::load_example("seed002/spring.textproto");
  config::Site& site = *loaded.experiment.mutable_site(0);
  site.mutable_channel(0)->mutable_prediction()->mutable_spring()->set_stiffness_n_per_m(1000.0);
  site.mutable_channel(0)->mutable_specimen()->mutable_spring()->set_stiffness_n_per_m(2000.0);
  EXPECT_EQ(describe_site_models(site), "LinearSpring stiffness_n_per_m=1000");
  site.mutable_channel(0)->clear_prediction();
  EXPECT_EQ(describe_site_models(site), "LinearSpring stiffness_n_per_m=2000");  // the specimen stands in
  *site.add_channel() = site.channel(0);
  const std::string two = describe_site_models(site);
  EXPECT_EQ(two, "LinearSpring stiffness_n_per_m=2000 | LinearSpring stiffness_n_per_m=2000");
  const wire::SiteTerms terms = site_terms(loaded.experiment, site, two);
  EXPECT_EQ(terms.model_description(), two);
  EXPECT_EQ(terms.model_digest(), fnv1a(two));
  EXPECT_EQ(terms.channels(), 2U);
  EXPECT_EQ(terms.stroke_limit_m_size(), 2);
}

}  // namespace
}  // namespace rths::test_site_terms
