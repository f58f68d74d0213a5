// The store's rows and the agent protocol's messages as the version before the field tables
// (common/field_table.h) wrote them: the writers still write these bytes, and the readers still
// read them back to the same objects. A change here is a change of the stored or sent format.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <type_traits>
#include <vector>

#include "model/codec.h"
#include "model/desired_state_json.h"
#include "model/node_report_json.h"

namespace gpurent::model {
namespace {

Instance sample_instance() {
  Instance v;
  v.id = "i-1";
  v.tenant_id = "t-1";
  v.spec.name = "sweep-3-0";
  v.spec.gpu_types = {"h100-80g", "a100-80g"};
  v.spec.gpu_count = 2;
  v.spec.gpu_milli = 500;
  v.spec.gpu_memory_gb = 12;
  v.spec.min_gpu_memory_gb = 40;
  v.spec.cpu = 4;
  v.spec.memory_gb = 32;
  v.spec.disk_gb = 50;
  v.spec.node_selector = {{"zone", "b"}};
  v.spec.command = {"sh", "-c", "echo \"hi\" \\ there\n\tbye \x01 \xc3\xbc"};
  v.spec.process_command = {"python3", "serve.py"};
  v.spec.template_name = "pytorch";
  v.spec.env = {{"B", "2"}, {"A", "quote\"d"}};
  v.spec.pricing = PricingModel::kSpot;
  v.spec.restart_policy = RestartPolicy::kNever;
  v.spec.priority = -3;
  v.spec.queue = false;
  v.spec.wait_for_capacity = true;
  v.spec.max_runtime_s = 3600;
  v.spec.max_price = 1'500'000;
  v.spec.reservation_id = "r-1";
  v.spec.image = "nvcr.io/nvidia/pytorch:24.10-py3";
  v.spec.volumes = {{"v-1", "/data"}};
  v.spec.services = {"jupyter"};
  v.spec.workdir = "u-7";
  v.state = InstanceState::kRunning;
  v.node_id = "n-1";
  v.gpus = {"GPU-a", "GPU-b"};
  v.gpu_type = "h100-80g";
  v.gpu_milli = 500;
  v.queued_at = from_unix_ms(1'790'000'000'123);
  v.queue_sequence = 42;
  v.run = 3;
  v.created_at = from_unix_ms(1'790'000'000'000);
  v.started_at = from_unix_ms(1'790'000'001'000);
  v.exit_code = -1;
  v.reason = "retrying";
  v.terminate_requested = true;
  v.preempt_requested = true;
  v.requeue_requested = true;
  v.start_requested = true;
  v.placed_generation = 1'048'600;
  v.job_id = "j-1";
  v.job_task = 3;
  v.job_rank = 1;
  v.master_address = "node-a";
  v.master_port = 29501;
  v.revision = 9;
  return v;
}

Job sample_job() {
  Job job;
  job.id = "j-1";
  job.tenant_id = "t-1";
  job.spec.task = sample_instance().spec;
  job.spec.nodes = 2;
  job.spec.array = 4;
  job.spec.retries = 1;
  job.state = JobState::kRunning;
  job.created_at = from_unix_ms(1'790'000'000'000);
  job.started_at = from_unix_ms(1'790'000'002'000);
  job.reason = "2 of 4 running";
  job.tasks.push_back({.index = 0,
                       .state = JobState::kSucceeded,
                       .attempts = 1,
                       .exit_code = 0,
                       .members = {"i-1", "i-2"}});
  job.tasks.push_back({.index = 1, .state = JobState::kQueued});
  job.revision = 5;
  return job;
}

UsageRecord sample_usage() {
  return UsageRecord{.id = "i-1/3",
                     .tenant_id = "t-1",
                     .instance_id = "i-1",
                     .run = 3,
                     .kind = UsageKind::kStoppedDisk,
                     .pricing = PricingModel::kSpot,
                     .gpu_type = "h100-80g",
                     .gpu_count = 2,
                     .gpu_milli = 500,
                     .cpu = 8,
                     .memory_gb = 64,
                     .disk_gb = 100,
                     .price_per_gpu_hour = 18'000'000,
                     .started_at = from_unix_ms(1'790'000'000'000),
                     .ended_at = from_unix_ms(1'790'000'062'000),
                     .metered_until = from_unix_ms(1'790'000'061'000),
                     .billed_seconds = 61,
                     .charged = 305'000,
                     .segment_rate = 9'000'000'000,
                     .segment_seconds = 60,
                     .segment_charged = 300'000,
                     .package_seconds = 7};
}

DesiredState sample_desired() {
  DesiredState desired{"n-1", 1'048'577, {}, {"v-1"}};
  desired.workloads.push_back({.instance_id = "i-1",
                               .tenant_id = "t-1",
                               .run = 2,
                               .should_run = true,
                               .image = "pytorch/pytorch:2.5.1",
                               .command = {"python", "-c", "print(1)"},
                               .env = {{"A", "x\ny"}},
                               .gpus = {"GPU-a"},
                               .cpu = 4,
                               .memory_gb = 64,
                               .disk_gb = 200,
                               .volumes = {{"v-1", "/data"}},
                               .services = {"jupyter"},
                               .workdir = "u-1"});
  desired.workloads.push_back({.instance_id = "i-2", .run = 1, .should_run = false});
  desired.instances = {"i-1", "i-2", "i-3"};
  desired.workloads.back().job = JobMemberPlacement{.job_id = "j-1",
                                                    .index = 7,
                                                    .array_size = 8,
                                                    .nodes = 2,
                                                    .rank = 1,
                                                    .gpus_per_node = 4,
                                                    .master_address = "10.0.0.1",
                                                    .master_port = 29501};
  return desired;
}

NodeReport sample_report() {
  NodeReport report;
  report.applied_generation = 42;
  report.workloads.push_back({"i-a", 3, WorkloadPhase::kExited, 137, "killed \xff\n", true});
  report.workloads.push_back({"i-b", 1, WorkloadPhase::kRunning, std::nullopt, ""});
  report.node_api_address = "10.0.0.7:7071";
  report.node_api_secret = "gns_secret";
  report.container_runtime = false;
  report.container_toolkit =
      ContainerToolkit{.version = "1.17.7", .gpu_containers = false, .note = "too old"};
  report.sent_at_ms = 1'764'550'000'123;
  GpuSample sample{.uuid = "GPU-a", .time_ms = 1'764'550'000'000, .gpu_util_pct = 97};
  report.telemetry.samples.push_back(sample);
  report.telemetry.xids.push_back({"GPU-a", 1'764'550'000'050, 79});
  report.telemetry.dropped = 2;
  return report;
}

Node sample_node() {
  Node node;
  node.id = "n-1";
  node.name = "gpu-01";
  node.address = "10.0.0.1";
  node.gpus = {{"GPU-a", 0, "h100-80g", "NVIDIA H100", 81920, 0, 1, 0}};
  node.cpu_count = 64;
  node.memory_mb = 512'000;
  node.disk_gb = 2000;
  node.fabric_group = "ib-1";
  node.labels = {{"zone", "b"}};
  node.cordoned = true;
  node.simulated = true;
  node.container_runtime = true;
  node.isolation = "sandbox";
  node.isolation_note = "no cgroup limits";
  node.registered_from = "10.0.0.1";
  node.agent_version = "0.1.0";
  node.state = NodeState::kDown;
  node.registered_at = from_unix_ms(1'790'000'000'000);
  node.last_heartbeat = from_unix_ms(1'790'000'005'000);
  node.generation = 17;
  node.credential_hash = "hash";
  node.ecc_dbe_seen = {{"GPU-a", 2}};
  return node;
}

// Every other stored or sent type, one document each, as Json(value).dump() writes it.
std::vector<std::string> sample_documents() {
  const auto t = from_unix_ms(1'790'000'000'000);
  Reservation reservation{.id = "r-1",
                          .tenant_id = "t-1",
                          .gpu_type = "h100-80g",
                          .gpu_count = 8,
                          .start = t,
                          .end = t + std::chrono::hours(24),
                          .state = ReservationState::kActive,
                          .created_at = t,
                          .payment = ReservationPayment::kMonthly,
                          .price_per_gpu_hour = 2'000'000,
                          .discount_permille = 150,
                          .total = 300'000'000,
                          .paid = 100'000'000,
                          .recognised = 50'000'000,
                          .periods_paid = 1,
                          .refunded = true};
  Quota quota{
      .tenant_id = "t-1", .max_gpus_per_type = {{"h100-80g", 16}}, .max_instances = 4, .weight = 3};
  Template tmpl{.name = "pytorch",
                .description = "PyTorch",
                .image = "pytorch/pytorch",
                .command = {"sleep", "infinity"},
                .process_command = {"python3"},
                .env = {{"A", "1"}},
                .services = {"jupyter"},
                .recommended_gpu_memory_gb = 24,
                .builtin = true};
  Tenant tenant{.id = "t-1", .name = "acme", .created_at = t};
  ApiKey key{.id = "k-1",
             .tenant_id = "t-1",
             .role = Role::kOperator,
             .name = "ci",
             .secret_hash = "h",
             .prefix = "gpr_ab",
             .created_at = t};
  JoinToken token{.id = "jt-1",
                  .secret_hash = "h",
                  .description = "rack 3",
                  .created_at = t,
                  .expires_at = t + std::chrono::hours(1)};
  IdempotencyRecord idempotency{
      .tenant_id = "t-1", .key = "k", .fingerprint = "f", .object_id = "i-1", .created_at = t};
  Volume volume{.id = "v-1",
                .tenant_id = "t-1",
                .name = "data",
                .size_gb = 100,
                .node_id = "n-1",
                .state = VolumeState::kDeleted,
                .created_at = t,
                .deleted_at = t + std::chrono::hours(2),
                .price_per_gb_month = 500'000,
                .metered_until = t + std::chrono::hours(1),
                .billed_seconds = 3600,
                .charged = 134};
  Event event{.seq = 7,
              .at = t,
              .tenant_id = "t-1",
              .object_id = "i-1",
              .kind = "instance.moved",
              .message = "moved"};
  PackageProduct product{.name = "h100-100",
                         .gpu_type = "h100-80g",
                         .gpu_hours = 100,
                         .price = 150'000'000,
                         .validity_days = 30};
  Package package{.id = "p-1",
                  .tenant_id = "t-1",
                  .product = "h100-100",
                  .gpu_type = "h100-80g",
                  .capacity = 360'000'000,
                  .used = 1000,
                  .price = 150'000'000,
                  .recognised = 10,
                  .bought_at = t,
                  .expires_at = t + std::chrono::hours(720),
                  .expired = true,
                  .idempotency_key = "idem"};
  BalanceSettings settings{
      .tenant_id = "t-1", .warning_threshold = 5, .credit_limit = 6, .warned = false};
  Downtime downtime{.id = "dt:i-1:1",
                    .tenant_id = "t-1",
                    .instance_id = "i-1",
                    .cause = "node_down",
                    .start = t,
                    .end = t + std::chrono::minutes(5)};
  GpuQuarantine quarantine{.id = "GPU-a",
                           .node_id = "n-1",
                           .gpu_index = 3,
                           .cause = "xid",
                           .xid = 79,
                           .message = "fell off the bus",
                           .at = t,
                           .released_at = t + std::chrono::hours(1),
                           .released_by = "k-1"};
  NodeRegistration registration{.name = "gpu-01",
                                .gpus = sample_node().gpus,
                                .cpu_count = 64,
                                .memory_mb = 1024,
                                .disk_gb = 10,
                                .fabric_group = "ib",
                                .labels = {{"a", "b"}},
                                .address = "10.0.0.1",
                                .simulated = true,
                                .container_runtime = true,
                                .agent_version = "0.1.0",
                                .isolation = "none",
                                .isolation_note = "why"};
  RegistrationResult registered{.node_id = "n-1", .credential = "secret"};
  GpuBenchmarkHistory benchmarks{
      .id = "GPU-a",
      .node_id = "n-1",
      .gpu_type = "h100-80g",
      .gpu_index = 3,
      .runs = {{.at = t,
                .reason = BenchmarkReason::kReleased,
                .simulated = false,
                .figures = {.index = 3,
                            .uuid = "GPU-a",
                            .gemm_gflops = {{"bf16", 701'300}, {"fp32", 51'000}},
                            .memory_mbps = 3'010'000,
                            .h2d_mbps = 51'000,
                            .d2h_mbps = 50'200},
                .peers = {{.from = 3, .to = 2, .mbps = 360'100}}}},
      .trainings = {{.at = t,
                     .instance_id = "i-9",
                     .model = "resnet50",
                     .batch = 64,
                     .image_size = 224,
                     .device = "NVIDIA H100 80GB HBM3",
                     .images_per_hour = {{"amp", 10'800'000}, {"fp32", 3'600'000}}}}};
  return {Json(sample_node()).dump(), Json(sample_job()).dump(),
          Json(reservation).dump(),   Json(quota).dump(),
          Json(tmpl).dump(),          Json(tenant).dump(),
          Json(key).dump(),           Json(token).dump(),
          Json(idempotency).dump(),   Json(volume).dump(),
          Json(event).dump(),         Json(product).dump(),
          Json(package).dump(),       Json(settings).dump(),
          Json(downtime).dump(),      Json(quarantine).dump(),
          Json(registration).dump(),  Json(registered).dump(),
          Json(benchmarks).dump(),    Json(sample_desired()).dump()};
}

constexpr const char* kInstance =
    R"json({"created_at":1790000000000,"ended_at":null,"exit_code":-1,"gpu_milli":500,"gpu_type":"h100-80g","gpus":["GPU-a","GPU-b"],"id":"i-1","job_id":"j-1","job_rank":1,"job_task":3,"master_addr":"node-a","master_port":29501,"node_id":"n-1","placed_generation":1048600,"preempt_requested":true,"queue_sequence":42,"queued_at":1790000000123,"reason":"retrying","requeue_requested":true,"revision":9,"run":3,"spec":{"command":["sh","-c","echo \"hi\" \\ there\n\tbye \u0001 ü"],"cpu":4,"disk_gb":50,"env":{"A":"quote\"d","B":"2"},"gpu_count":2,"gpu_memory_gb":12,"gpu_milli":500,"gpu_types":["h100-80g","a100-80g"],"image":"nvcr.io/nvidia/pytorch:24.10-py3","max_price":1500000,"max_runtime_s":3600,"memory_gb":32,"min_gpu_memory_gb":40,"name":"sweep-3-0","node_selector":{"zone":"b"},"pricing":"spot","priority":-3,"process_command":["python3","serve.py"],"queue":false,"reservation_id":"r-1","restart_policy":"never","services":["jupyter"],"template":"pytorch","volumes":[{"mount_path":"/data","volume_id":"v-1"}],"wait_for_capacity":true,"workdir":"u-7"},"start_requested":true,"started_at":1790000001000,"state":"running","tenant_id":"t-1","terminate_requested":true})json";
constexpr const char* kEmptyInstance =
    R"json({"created_at":0,"ended_at":null,"exit_code":null,"gpu_milli":1000,"gpu_type":"","gpus":[],"id":"","job_id":"","job_rank":0,"job_task":-1,"master_addr":"","master_port":0,"node_id":"","placed_generation":0,"preempt_requested":false,"queue_sequence":0,"queued_at":0,"reason":"","requeue_requested":false,"revision":0,"run":0,"spec":{"command":[],"cpu":0,"disk_gb":0,"env":{},"gpu_count":1,"gpu_memory_gb":0,"gpu_milli":1000,"gpu_types":[],"image":"","max_price":null,"max_runtime_s":null,"memory_gb":0,"min_gpu_memory_gb":0,"name":"","node_selector":{},"pricing":"on_demand","priority":0,"process_command":[],"queue":true,"reservation_id":"","restart_policy":"on_node_failure","services":[],"template":"","volumes":[],"wait_for_capacity":false,"workdir":""},"start_requested":false,"started_at":null,"state":"pending","tenant_id":"","terminate_requested":false})json";
constexpr const char* kMemberRow =
    R"json({"created_at":1790000000000,"ended_at":null,"exit_code":-1,"gpu_milli":500,"gpu_type":"h100-80g","gpus":["GPU-a","GPU-b"],"id":"i-1","job_id":"j-1","job_rank":1,"job_task":3,"master_addr":"node-a","master_port":29501,"node_id":"n-1","placed_generation":1048600,"preempt_requested":true,"queue_sequence":42,"queued_at":1790000000123,"reason":"retrying","requeue_requested":true,"revision":9,"run":3,"start_requested":true,"started_at":1790000001000,"state":"running","tenant_id":"t-1","terminate_requested":true})json";
constexpr const char* kUsageRecord =
    R"json({"billed_seconds":61,"charged":305000,"cpu":8,"disk_gb":100,"ended_at":1790000062000,"gpu_count":2,"gpu_milli":500,"gpu_type":"h100-80g","id":"i-1/3","instance_id":"i-1","kind":"stopped_disk","memory_gb":64,"metered_until":1790000061000,"package_seconds":7,"price_per_gpu_hour":18000000,"pricing":"spot","run":3,"segment_charged":300000,"segment_rate":9000000000,"segment_seconds":60,"started_at":1790000000000,"tenant_id":"t-1"})json";
constexpr const char* kDesiredState =
    R"json({"generation":1048577,"instances":["i-1","i-2","i-3"],"node_id":"n-1","volumes":["v-1"],"workloads":[{"command":["python","-c","print(1)"],"cpu":4,"disk_gb":200,"env":{"A":"x\ny"},"gpus":["GPU-a"],"image":"pytorch/pytorch:2.5.1","instance_id":"i-1","memory_gb":64,"run":2,"services":["jupyter"],"should_run":true,"tenant_id":"t-1","volumes":[{"mount_path":"/data","volume_id":"v-1"}],"workdir":"u-1"},{"command":[],"cpu":0,"disk_gb":0,"env":{},"gpus":[],"image":"","instance_id":"i-2","job":{"array_size":8,"gpus_per_node":4,"id":"j-1","index":7,"master_addr":"10.0.0.1","master_port":29501,"nodes":2,"rank":1},"memory_gb":0,"run":1,"services":[],"should_run":false,"tenant_id":"","volumes":[],"workdir":""}]})json";
constexpr const char* kNodeReport =
    R"json({"applied_generation":42,"container_runtime":false,"container_toolkit":{"gpu_containers":false,"note":"too old","version":"1.17.7"},"node_api_address":"10.0.0.7:7071","node_api_secret":"gns_secret","sent_at_ms":1764550000123,"telemetry":"AgIBBUdQVS1hAQEAgPaB9tpmwgEBBUdQVS1h5PaB9tpmngE=","workloads":[{"exit_code":137,"instance_id":"i-a","message":"killed �\n","never_started":true,"phase":"exited","run":3},{"exit_code":null,"instance_id":"i-b","message":"","phase":"running","run":1}]})json";
// sample_documents(), in order.
const std::vector<std::string> kDocuments =
    {
        R"json({"address":"10.0.0.1","agent_version":"0.1.0","container_runtime":true,"cordoned":true,"cpu_count":64,"credential_hash":"hash","disk_gb":2000,"ecc_dbe_seen":{"GPU-a":2},"fabric_group":"ib-1","generation":17,"gpus":[{"index":0,"memory_mb":81920,"name":"NVIDIA H100","numa_node":0,"nvlink_domain":0,"pcie_switch":1,"type":"h100-80g","uuid":"GPU-a"}],"id":"n-1","isolation":"sandbox","isolation_note":"no cgroup limits","labels":{"zone":"b"},"last_heartbeat":1790000005000,"memory_mb":512000,"name":"gpu-01","registered_at":1790000000000,"registered_from":"10.0.0.1","simulated":true,"state":"down"})json",
        R"json({"array":4,"created_at":1790000000000,"ended_at":null,"id":"j-1","nodes":2,"reason":"2 of 4 running","retries":1,"revision":5,"started_at":1790000002000,"state":"running","task":{"command":["sh","-c","echo \"hi\" \\ there\n\tbye \u0001 ü"],"cpu":4,"disk_gb":50,"env":{"A":"quote\"d","B":"2"},"gpu_count":2,"gpu_memory_gb":12,"gpu_milli":500,"gpu_types":["h100-80g","a100-80g"],"image":"nvcr.io/nvidia/pytorch:24.10-py3","max_price":1500000,"max_runtime_s":3600,"memory_gb":32,"min_gpu_memory_gb":40,"name":"sweep-3-0","node_selector":{"zone":"b"},"pricing":"spot","priority":-3,"process_command":["python3","serve.py"],"queue":false,"reservation_id":"r-1","restart_policy":"never","services":["jupyter"],"template":"pytorch","volumes":[{"mount_path":"/data","volume_id":"v-1"}],"wait_for_capacity":true,"workdir":"u-7"},"tasks":[{"attempts":1,"exit_code":0,"index":0,"members":["i-1","i-2"],"state":"succeeded"},{"attempts":0,"exit_code":null,"index":1,"members":[],"state":"queued"}],"tenant_id":"t-1"})json",
        R"json({"created_at":1790000000000,"discount_permille":150,"end":1790086400000,"gpu_count":8,"gpu_type":"h100-80g","id":"r-1","paid":100000000,"payment":"monthly","periods_paid":1,"price_per_gpu_hour":2000000,"recognised":50000000,"refunded":true,"start":1790000000000,"state":"active","tenant_id":"t-1","total":300000000})json",
        R"json({"max_gpus_per_type":{"h100-80g":16},"max_instances":4,"tenant_id":"t-1","weight":3})json",
        R"json({"builtin":true,"command":["sleep","infinity"],"description":"PyTorch","env":{"A":"1"},"image":"pytorch/pytorch","name":"pytorch","process_command":["python3"],"recommended_gpu_memory_gb":24,"services":["jupyter"]})json",
        R"json({"created_at":1790000000000,"id":"t-1","name":"acme"})json",
        R"json({"created_at":1790000000000,"id":"k-1","name":"ci","prefix":"gpr_ab","role":"operator","secret_hash":"h","tenant_id":"t-1"})json",
        R"json({"created_at":1790000000000,"description":"rack 3","expires_at":1790003600000,"id":"jt-1","secret_hash":"h"})json",
        R"json({"created_at":1790000000000,"fingerprint":"f","key":"k","object_id":"i-1","tenant_id":"t-1"})json",
        R"json({"billed_seconds":3600,"charged":134,"created_at":1790000000000,"deleted_at":1790007200000,"id":"v-1","metered_until":1790003600000,"name":"data","node_id":"n-1","price_per_gb_month":500000,"size_gb":100,"state":"deleted","tenant_id":"t-1"})json",
        R"json({"at":1790000000000,"kind":"instance.moved","message":"moved","object_id":"i-1","seq":7,"tenant_id":"t-1"})json",
        R"json({"gpu_hours":100,"gpu_type":"h100-80g","name":"h100-100","price":150000000,"validity_days":30})json",
        R"json({"bought_at":1790000000000,"capacity":360000000,"expired":true,"expires_at":1792592000000,"gpu_type":"h100-80g","id":"p-1","idempotency_key":"idem","price":150000000,"product":"h100-100","recognised":10,"tenant_id":"t-1","used":1000})json",
        R"json({"credit_limit":6,"tenant_id":"t-1","warned":false,"warning_threshold":5})json",
        R"json({"cause":"node_down","end":1790000300000,"id":"dt:i-1:1","instance_id":"i-1","start":1790000000000,"tenant_id":"t-1"})json",
        R"json({"at":1790000000000,"cause":"xid","gpu_index":3,"id":"GPU-a","message":"fell off the bus","node_id":"n-1","released_at":1790003600000,"released_by":"k-1","xid":79})json",
        R"json({"address":"10.0.0.1","agent_version":"0.1.0","container_runtime":true,"cpu_count":64,"disk_gb":10,"fabric_group":"ib","gpus":[{"index":0,"memory_mb":81920,"name":"NVIDIA H100","numa_node":0,"nvlink_domain":0,"pcie_switch":1,"type":"h100-80g","uuid":"GPU-a"}],"isolation":"none","isolation_note":"why","labels":{"a":"b"},"memory_mb":1024,"name":"gpu-01","simulated":true})json",
        R"json({"credential":"secret","node_id":"n-1"})json",
        R"json({"gpu_index":3,"gpu_type":"h100-80g","id":"GPU-a","node_id":"n-1","runs":[{"at":1790000000000,"figures":{"d2h_mbps":50200,"gemm_gflops":{"bf16":701300,"fp32":51000},"h2d_mbps":51000,"index":3,"memory_mbps":3010000,"uuid":"GPU-a"},"peers":[{"from":3,"mbps":360100,"to":2}],"reason":"released","simulated":false}],"trainings":[{"at":1790000000000,"batch":64,"device":"NVIDIA H100 80GB HBM3","image_size":224,"images_per_hour":{"amp":10800000,"fp32":3600000},"instance_id":"i-9","model":"resnet50"}]})json",
        R"json({"generation":1048577,"instances":["i-1","i-2","i-3"],"node_id":"n-1","volumes":["v-1"],"workloads":[{"command":["python","-c","print(1)"],"cpu":4,"disk_gb":200,"env":{"A":"x\ny"},"gpus":["GPU-a"],"image":"pytorch/pytorch:2.5.1","instance_id":"i-1","memory_gb":64,"run":2,"services":["jupyter"],"should_run":true,"tenant_id":"t-1","volumes":[{"mount_path":"/data","volume_id":"v-1"}],"workdir":"u-1"},{"command":[],"cpu":0,"disk_gb":0,"env":{},"gpus":[],"image":"","instance_id":"i-2","job":{"array_size":8,"gpus_per_node":4,"id":"j-1","index":7,"master_addr":"10.0.0.1","master_port":29501,"nodes":2,"rank":1},"memory_gb":0,"run":1,"services":[],"should_run":false,"tenant_id":"","volumes":[],"workdir":""}]})json",
};

TEST(CodecFormatTest, TheWritersWriteWhatThePreviousVersionWrote) {
  EXPECT_EQ(instance_json(sample_instance()), kInstance);
  EXPECT_EQ(instance_json(Instance{}), kEmptyInstance);
  EXPECT_EQ(instance_row_json(sample_instance()), kMemberRow);
  EXPECT_EQ(usage_record_json(sample_usage()), kUsageRecord);
  EXPECT_EQ(desired_state_json(sample_desired()), kDesiredState);
  EXPECT_EQ(node_report_json(sample_report()), kNodeReport);
  EXPECT_EQ(sample_documents(), kDocuments);
}

TEST(CodecFormatTest, TheReadersReadWhatThePreviousVersionWrote) {
  const Job job = sample_job();
  const auto job_of = [&](std::string_view id) { return id == job.id ? &job : nullptr; };
  EXPECT_EQ(instance_json(instance_from_row(Json::parse(kInstance), job_of)), kInstance);
  // A member's row takes its spec from its job.
  const Instance member = instance_from_row(Json::parse(kMemberRow), job_of);
  EXPECT_EQ(Json(member.spec), Json(job_member_spec(job, 3, 1)));
  EXPECT_EQ(usage_record_json(Json::parse(kUsageRecord).get<UsageRecord>()), kUsageRecord);
  EXPECT_EQ(desired_state_json(read_desired_state(kDesiredState).value()), kDesiredState);
  const NodeReport report = read_node_report(kNodeReport).value();
  EXPECT_EQ(report.telemetry, sample_report().telemetry);
  EXPECT_EQ(node_report_json(report), kNodeReport);
  const auto again = [](const std::string& text, const auto& type) {
    return Json(Json::parse(text).get<std::remove_cvref_t<decltype(type)>>()).dump();
  };
  const std::vector<std::string> read_back = {again(kDocuments[0], Node{}),
                                              again(kDocuments[1], Job{}),
                                              again(kDocuments[2], Reservation{}),
                                              again(kDocuments[3], Quota{}),
                                              again(kDocuments[4], Template{}),
                                              again(kDocuments[5], Tenant{}),
                                              again(kDocuments[6], ApiKey{}),
                                              again(kDocuments[7], JoinToken{}),
                                              again(kDocuments[8], IdempotencyRecord{}),
                                              again(kDocuments[9], Volume{}),
                                              again(kDocuments[10], Event{}),
                                              again(kDocuments[11], PackageProduct{}),
                                              again(kDocuments[12], Package{}),
                                              again(kDocuments[13], BalanceSettings{}),
                                              again(kDocuments[14], Downtime{}),
                                              again(kDocuments[15], GpuQuarantine{}),
                                              again(kDocuments[16], NodeRegistration{}),
                                              again(kDocuments[17], RegistrationResult{}),
                                              again(kDocuments[18], GpuBenchmarkHistory{})};
  EXPECT_EQ(read_back, std::vector<std::string>(kDocuments.begin(), kDocuments.end() - 1));
}

// Rows written before a member existed: the readers fill in what the version that wrote them
// meant.
TEST(CodecFormatTest, OlderRowsReadAsTheyWereMeant) {
  const auto no_job = [](std::string_view) -> const Job* { return nullptr; };
  Json row = Json::parse(kInstance);
  for (const char* member : {"queued_at", "gpu_type", "gpu_milli", "queue_sequence", "revision",
                             "start_requested", "master_addr"}) {
    row.erase(member);
  }
  row["master_port"] = "29502";
  row["spec"].erase("gpu_types");
  row["spec"]["gpu_type"] = "a100-80g";
  row["spec"].erase("restart_policy");
  const Instance old = instance_from_row(row, no_job);
  EXPECT_EQ(old.queued_at, old.created_at);
  EXPECT_EQ(old.gpu_type, "a100-80g");
  EXPECT_EQ(old.spec.gpu_types, std::vector<std::string>{"a100-80g"});
  EXPECT_EQ(old.spec.restart_policy, RestartPolicy::kNever);  // spot's default
  EXPECT_EQ(old.master_port, 29502);
  EXPECT_EQ(old.gpu_milli, kMilliPerGpu);
  EXPECT_EQ(old.master_address, "");

  Json usage = Json::parse(kUsageRecord);
  for (const char* member : {"kind", "pricing", "gpu_milli", "cpu", "segment_rate",
                             "segment_seconds", "segment_charged", "package_seconds"}) {
    usage.erase(member);
  }
  const auto record = usage.get<UsageRecord>();
  EXPECT_EQ(record.kind, UsageKind::kRun);
  EXPECT_EQ(record.pricing, PricingModel::kOnDemand);
  EXPECT_EQ(record.segment_rate, Micros{18'000'000} * 2 * 1000);
  EXPECT_EQ(record.segment_seconds, 61);
  EXPECT_EQ(record.segment_charged, 305'000);

  // A row without a member the platform always wrote is corrupt.
  Json corrupt = Json::parse(kInstance);
  corrupt.erase("placed_generation");
  EXPECT_THROW(instance_from_row(corrupt, no_job), std::exception);
}

TEST(CodecFormatTest, EveryTableListsItsNamesInSortedOrder) {
  EXPECT_TRUE(schema::table_is_sorted<Gpu>());
  EXPECT_TRUE(schema::table_is_sorted<Node>());
  EXPECT_TRUE(schema::table_is_sorted<InstanceSpec>());
  EXPECT_TRUE(schema::table_is_sorted<Instance>());
  EXPECT_TRUE(schema::table_is_sorted<JobTask>());
  EXPECT_TRUE(schema::table_is_sorted<Job>());
  EXPECT_TRUE(schema::table_is_sorted<Reservation>());
  EXPECT_TRUE(schema::table_is_sorted<Quota>());
  EXPECT_TRUE(schema::table_is_sorted<Template>());
  EXPECT_TRUE(schema::table_is_sorted<Tenant>());
  EXPECT_TRUE(schema::table_is_sorted<ApiKey>());
  EXPECT_TRUE(schema::table_is_sorted<JoinToken>());
  EXPECT_TRUE(schema::table_is_sorted<IdempotencyRecord>());
  EXPECT_TRUE(schema::table_is_sorted<UsageRecord>());
  EXPECT_TRUE(schema::table_is_sorted<Volume>());
  EXPECT_TRUE(schema::table_is_sorted<VolumeMount>());
  EXPECT_TRUE(schema::table_is_sorted<Event>());
  EXPECT_TRUE(schema::table_is_sorted<PackageProduct>());
  EXPECT_TRUE(schema::table_is_sorted<Package>());
  EXPECT_TRUE(schema::table_is_sorted<BalanceSettings>());
  EXPECT_TRUE(schema::table_is_sorted<Downtime>());
  EXPECT_TRUE(schema::table_is_sorted<GpuQuarantine>());
  EXPECT_TRUE(schema::table_is_sorted<NodeRegistration>());
  EXPECT_TRUE(schema::table_is_sorted<RegistrationResult>());
  EXPECT_TRUE(schema::table_is_sorted<JobMemberPlacement>());
  EXPECT_TRUE(schema::table_is_sorted<WorkloadSpec>());
  EXPECT_TRUE(schema::table_is_sorted<DesiredState>());
  EXPECT_TRUE(schema::table_is_sorted<WorkloadStatus>());
  EXPECT_TRUE(schema::table_is_sorted<NodeReport>());
}

}  // namespace
}  // namespace gpurent::model
