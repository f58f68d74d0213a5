// The API's bodies read alone, without a server: each rule a body can break, with the field and
// code a client is told.
#include "server/request_bodies.h"

#include <gtest/gtest.h>

namespace gpurent::server {
namespace {

// The code of the error a body gets, or "ok".
template <class T>
std::string outcome(const Result<T>& result) {
  return result ? "ok" : result.error().code;
}

TEST(RequestBodiesTest, AnInstanceNamesItsTypeOnceAndItsQueueingConsistently) {
  const auto spec = parse_instance_spec(Json::parse(R"({"gpu_type": "h100-80g"})"));
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->gpu_types, std::vector<std::string>{"h100-80g"});
  EXPECT_EQ(spec->gpu_count, 1);
  EXPECT_TRUE(spec->queue);
  EXPECT_FALSE(spec->wait_for_capacity);
  EXPECT_EQ(spec->command, (std::vector<std::string>{"sleep", "infinity"}));
  // "any" is every type: no list.
  EXPECT_TRUE(parse_instance_spec(Json::parse(R"({"gpu_type": "any"})"))->gpu_types.empty());
  for (const char* bad : {
           R"({})",                                                          // no type
           R"({"gpu_type": "h100-80g", "gpu_types": ["a100-80g"]})",         // both
           R"({"gpu_types": []})",                                           // none listed
           R"({"gpu_type": "h100-80g", "gpu_count": 0})",                    // out of range
           R"({"gpu_type": "h100-80g", "gpu_milli": 500, "gpu_count": 2})",  // a share of many
           R"({"gpu_type": "h100-80g", "name": "a b"})",                     // not a name
           R"({"gpu_type": "h100-80g", "queue": false, "wait_for_capacity": true})",
           R"({"gpu_type": "h100-80g", "env": {"GPURENT_RUN": "1"}})",  // the platform's
       }) {
    EXPECT_EQ(outcome(parse_instance_spec(Json::parse(bad))), "invalid_field") << bad;
  }
  EXPECT_EQ(outcome(parse_instance_spec(Json::parse(R"({"gpu_type": "x", "gpu_cuont": 2})"))),
            "unknown_field");
}

TEST(RequestBodiesTest, AnEstimateTakesALaunchAndOptionallyEpochsOfResnet50) {
  const auto plain = parse_estimate(Json::parse(R"({"gpu_type": "h100-80g", "gpu_count": 2})"));
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(plain->spec.gpu_count, 2);
  EXPECT_FALSE(plain->work);
  const auto imagenet = parse_estimate(
      Json::parse(R"({"gpu_type": "h100-80g", "work": {"model": "resnet50", "epochs": 90}})"));
  ASSERT_TRUE(imagenet && imagenet->work);
  EXPECT_EQ(imagenet->work->epochs, 90);
  EXPECT_EQ(imagenet->work->images_per_epoch, billing::kImageNetTrainingImages);
  EXPECT_EQ(imagenet->work->precision, "amp");
  const auto own = parse_estimate(Json::parse(
      R"({"gpu_type": "h100-80g", "work": {"model": "resnet50", "epochs": 1,
          "images_per_epoch": 5000, "precision": "fp32"}})"));
  ASSERT_TRUE(own && own->work);
  EXPECT_EQ(own->work->images_per_epoch, 5000);
  EXPECT_EQ(own->work->precision, "fp32");
  for (const char* bad : {
           R"({"gpu_type": "h100-80g", "work": {"model": "vgg16", "epochs": 1}})",
           R"({"gpu_type": "h100-80g", "work": {"model": "resnet50", "epochs": 0}})",
           R"({"gpu_type": "h100-80g", "work": {"model": "resnet50", "epochs": 100001}})",
           R"({"gpu_type": "h100-80g", "work": {"model": "resnet50"}})",
           R"({"gpu_type": "h100-80g", "work": {"model": "resnet50", "epochs": 1,
               "images_per_epoch": -5}})",
           R"({"gpu_type": "h100-80g", "work": {"model": "resnet50", "epochs": 1,
               "precision": "fp64"}})",
           R"({"gpu_type": "h100-80g", "work": 3})",
       }) {
    EXPECT_EQ(outcome(parse_estimate(Json::parse(bad))), "invalid_field") << bad;
  }
  EXPECT_EQ(
      outcome(parse_estimate(Json::parse(
          R"({"gpu_type": "h100-80g", "work": {"model": "resnet50", "epochs": 1, "x": 1}})"))),
      "unknown_field");
}

TEST(RequestBodiesTest, ACommandIsAnArgvOrAShellLine) {
  const auto argv =
      parse_instance_spec(Json::parse(R"({"gpu_type": "h100-80g", "command": ["python3", "-V"]})"));
  EXPECT_EQ(argv->command, (std::vector<std::string>{"python3", "-V"}));
  const auto line =
      parse_instance_spec(Json::parse(R"({"gpu_type": "h100-80g", "command": "echo hi"})"));
  EXPECT_EQ(line->command, (std::vector<std::string>{"/bin/sh", "-c", "echo hi"}));
}

TEST(RequestBodiesTest, AJobRunsACommandAndTakesItsShape) {
  EXPECT_EQ(outcome(parse_job_spec(Json::parse(R"({"gpu_type": "h100-80g"})"))), "invalid_field");
  const auto job = parse_job_spec(Json::parse(
      R"({"gpu_type": "h100-80g", "command": "true", "array": 4, "nodes": 2, "queue": false})"));
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_EQ(job->array, 4);
  EXPECT_EQ(job->nodes, 2);
  EXPECT_FALSE(job->task.queue);
  // torchrun's variables are the platform's for job members.
  EXPECT_EQ(outcome(parse_job_spec(Json::parse(
                R"({"gpu_type": "h100-80g", "command": "true", "env": {"MASTER_ADDR": "x"}})"))),
            "invalid_field");
}

TEST(RequestBodiesTest, PricingIsOfferedOrNotAndSetsWhatMayGoWithIt) {
  const auto spot = parse_instance_spec(
      Json::parse(R"({"gpu_type": "h100-80g", "pricing": "spot", "max_price_micros": 5})"));
  ASSERT_TRUE(spot) << spot.error().message;
  EXPECT_EQ(spot->max_price, 5);
  EXPECT_EQ(spot->restart_policy, model::RestartPolicy::kNever);  // spot's default
  EXPECT_EQ(outcome(parse_instance_spec(Json::parse(R"({"gpu_type": "x", "pricing": "free"})"))),
            "unsupported_pricing");
  EXPECT_EQ(
      outcome(parse_instance_spec(Json::parse(R"({"gpu_type": "x", "pricing": "reserved"})"))),
      "reservation_required");
  EXPECT_EQ(
      outcome(parse_instance_spec(Json::parse(R"({"gpu_type": "x", "max_price_micros": 5})"))),
      "invalid_field");
  // null is absent: the default.
  const auto defaults =
      parse_instance_spec(Json::parse(R"({"gpu_type": "x", "pricing": null, "queue": null})"));
  ASSERT_TRUE(defaults) << defaults.error().message;
  EXPECT_EQ(defaults->pricing, model::PricingModel::kOnDemand);
  EXPECT_TRUE(defaults->queue);
  // on_demand is the spelling; on-demand (simulate's CSV once) is taken as well.
  for (const char* spelling : {"on_demand", "on-demand"}) {
    const auto on_demand = parse_instance_spec(
        Json{{"gpu_type", "x"}, {"pricing", spelling}, {"restart_policy", "never"}});
    ASSERT_TRUE(on_demand) << spelling << ": " << on_demand.error().message;
    EXPECT_EQ(on_demand->pricing, model::PricingModel::kOnDemand);
  }
}

TEST(RequestBodiesTest, AVolumeAndItsMountsAreNamedAndBounded) {
  const auto volume = parse_volume(Json::parse(R"({"name": "data", "size_gb": 100})"));
  ASSERT_TRUE(volume) << volume.error().message;
  EXPECT_EQ(volume->size_gb, 100);
  EXPECT_EQ(volume->node_id, "");
  for (const char* bad : {R"({"name": "a b", "size_gb": 1})", R"({"name": "", "size_gb": 1})",
                          R"({"name": "d", "size_gb": 0})", R"({"size_gb": 1})"}) {
    EXPECT_EQ(outcome(parse_volume(Json::parse(bad))), "invalid_field") << bad;
  }
  EXPECT_EQ(outcome(parse_instance_spec(Json::parse(
                R"({"gpu_type": "x", "volumes": [{"volume_id": "", "mount_path": "/d"}]})"))),
            "invalid_field");
  EXPECT_EQ(
      outcome(parse_instance_spec(Json::parse(
          R"({"gpu_type": "x", "volumes": [{"volume_id": "v", "mount_path": "/d", "ro": 1}]})"))),
      "unknown_field");
}

TEST(RequestBodiesTest, AReservationIsAWindowOrATerm) {
  const auto window = parse_reservation(Json::parse(
      R"({"gpu_type": "h100-80g", "gpu_count": 2, "start": "2027-01-01T00:00:00Z",
          "end": "2027-01-01T02:00:00Z"})"));
  ASSERT_TRUE(window) << window.error().message;
  EXPECT_EQ(window->end - window->start, Millis(2 * 3600 * 1000));
  EXPECT_FALSE(window->term_days);
  const auto term =
      parse_reservation(Json::parse(R"({"gpu_type": "h100-80g", "gpu_count": 1, "term_days": 7,
                                        "payment": "monthly"})"));
  ASSERT_TRUE(term) << term.error().message;
  EXPECT_EQ(term->term_days, 7);
  EXPECT_EQ(term->payment, model::ReservationPayment::kMonthly);
  for (
      const char* bad : {
          R"({"gpu_type": "h100-80g", "gpu_count": 1, "start": "2027-01-01T00:00:00Z"})",
          R"({"gpu_type": "h100-80g", "gpu_count": 1, "term_days": 7, "end": "2027-01-02T00:00:00Z"})",
          R"({"gpu_type": "h100-80g", "gpu_count": 1, "start": "tomorrow", "end": "2027-01-02T00:00:00Z"})",
      }) {
    EXPECT_EQ(outcome(parse_reservation(Json::parse(bad))), "invalid_field") << bad;
  }
}

TEST(RequestBodiesTest, AQuotaIsWholeAndItsCountsAreBounded) {
  const auto quota =
      parse_quota(Json::parse(R"({"max_gpus_per_type": {"h100-80g": 16}, "weight": 2})"), "t-1");
  ASSERT_TRUE(quota) << quota.error().message;
  EXPECT_EQ(quota->max_gpus_per_type.at("h100-80g"), 16);
  EXPECT_EQ(quota->weight, 2);
  EXPECT_FALSE(quota->max_instances);
  EXPECT_EQ(outcome(parse_quota(Json::parse(R"({"max_gpus_per_type": {"h100-80g": -1}})"), "t-1")),
            "invalid_field");
}

}  // namespace
}  // namespace gpurent::server
