#include "agent/runtime/docker_api.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/runtime/podman_test_env.h"
#include "agent/test_util.h"
#include "common/json.h"

namespace gpurent::agent {
namespace {

using testing::eventually;
using testing::PodmanService;

TEST(DockerApi, DemultiplexesTheEnginesLogFrames) {
  const std::string frames = std::string("\x01\0\0\0\0\0\0\x06", 8) + "hello\n" +
                             std::string("\x02\0\0\0\0\0\0\x04", 8) + "err\n";
  EXPECT_EQ(demultiplex_logs(frames), "hello\nerr\n");
  EXPECT_EQ(demultiplex_logs("plain tty output\n"), "plain tty output\n");
  EXPECT_EQ(demultiplex_logs(""), "");
  // A frame cut short keeps what arrived.
  EXPECT_EQ(demultiplex_logs(std::string("\x01\0\0\0\0\0\0\x09", 8) + "abc"), "abc");
}

TEST(DockerApi, AStreamSplitAnywhereComesOutFrameByFrameInOrder) {
  const std::string stream = std::string("\x01\0\0\0\0\0\0\x06", 8) + "hello\n" +
                             std::string("\x02\0\0\0\0\0\0\x04", 8) + "err\n" +
                             std::string("\x01\0\0\0\0\0\0\x00", 8) +
                             std::string("\x01\0\0\0\0\0\0\x03", 8) + "end";
  for (size_t piece = 1; piece <= stream.size(); ++piece) {
    StreamDemultiplexer frames;
    std::vector<std::pair<int, std::string>> out;
    for (size_t at = 0; at < stream.size(); at += piece) {
      ASSERT_TRUE(frames.feed(std::string_view(stream).substr(at, piece),
                              [&](int fd, std::string_view bytes) {
                                out.emplace_back(fd, bytes);
                                return true;
                              }));
    }
    EXPECT_EQ(out, (std::vector<std::pair<int, std::string>>{
                       {1, "hello\n"}, {2, "err\n"}, {1, ""}, {1, "end"}}))
        << "pieces of " << piece;
    EXPECT_TRUE(frames.unfinished().empty());
  }
  // A sink that has had enough stops the feed after the frame it refused.
  StreamDemultiplexer frames;
  int seen = 0;
  EXPECT_FALSE(frames.feed(stream, [&](int, std::string_view) { return ++seen < 2; }));
  EXPECT_EQ(seen, 2);
}

TEST(DockerApi, CreateBodyCarriesGpusLimitsAndMounts) {
  ContainerSpec spec{.name = "i-1.1",
                     .image = "pytorch:latest",
                     .command = {"python3", "train.py"},
                     .env = {{"A", "1"}},
                     .labels = {{"gpurent.instance", "i-1"}},
                     .mounts = {{"/data/v1", "/workspace", false}, {"/etc/x", "/x", true}},
                     .gpu_uuids = {"GPU-a", "GPU-b"},
                     .nano_cpus = 4'000'000'000,
                     .memory_bytes = 1 << 30,
                     .pids_limit = 4096,
                     .shm_bytes = 8 << 20,
                     .ulimits = {{"nofile", 1024, 1024}},
                     .network_mode = "host"};
  Json body = Json::parse(create_body(spec));
  EXPECT_EQ(body["Image"], "pytorch:latest");
  EXPECT_EQ(body["Cmd"], Json({"python3", "train.py"}));
  EXPECT_EQ(body["Env"], Json({"A=1"}));
  EXPECT_EQ(body["Labels"]["gpurent.instance"], "i-1");
  const Json& host = body["HostConfig"];
  EXPECT_EQ(host["NanoCpus"], 4'000'000'000);
  EXPECT_EQ(host["Memory"], 1 << 30);
  EXPECT_EQ(host["PidsLimit"], 4096);
  EXPECT_EQ(host["ShmSize"], 8 << 20);
  EXPECT_EQ(host["NetworkMode"], "host");
  EXPECT_EQ(host["Binds"], Json({"/data/v1:/workspace", "/etc/x:/x:ro"}));
  EXPECT_EQ(host["Ulimits"][0]["Name"], "nofile");
  EXPECT_EQ(host["DeviceRequests"][0]["Driver"], "nvidia");
  EXPECT_EQ(host["DeviceRequests"][0]["DeviceIDs"], Json({"GPU-a", "GPU-b"}));
  EXPECT_FALSE(host.contains("Devices"));

  spec.gpu_access = GpuAccess::kCdi;
  body = Json::parse(create_body(spec));
  EXPECT_FALSE(body["HostConfig"].contains("DeviceRequests"));
  EXPECT_EQ(body["HostConfig"]["Devices"][1]["PathOnHost"], "nvidia.com/gpu=GPU-b");

  ContainerSpec bare{.name = "b", .image = "busybox"};
  body = Json::parse(create_body(bare));
  EXPECT_FALSE(body.contains("Cmd"));  // the image's own
  for (const char* key : {"Binds", "NanoCpus", "Memory", "DeviceRequests", "Devices"}) {
    EXPECT_FALSE(body["HostConfig"].contains(key)) << key;
  }
}

// Whatever the spec, every container is unprivileged, gains nothing through setuid programs and
// keeps only the listed capabilities.
TEST(DockerApi, EveryCreateBodyIsHardened) {
  const Json capabilities = {"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID",
                             "KILL",  "SETGID",       "SETUID"};
  for (const ContainerSpec& spec :
       {ContainerSpec{.name = "b", .image = "busybox"},
        ContainerSpec{
            .name = "g", .image = "pytorch", .gpu_uuids = {"GPU-a"}, .network_mode = "host"},
        ContainerSpec{.name = "c",
        .image = "pytorch",
        .gpu_uuids = {"GPU-a"},
        .gpu_access = GpuAccess::kCdi}}) {
    const Json host = Json::parse(create_body(spec))["HostConfig"];
    EXPECT_EQ(host["Privileged"], false) << spec.name;
    EXPECT_EQ(host["SecurityOpt"], Json({"no-new-privileges"})) << spec.name;
    EXPECT_EQ(host["CapDrop"], Json({"ALL"})) << spec.name;
    EXPECT_EQ(host["CapAdd"], capabilities) << spec.name;
  }
}

TEST(DockerApi, HostSocketsAndKernelDirectoriesCannotBeMounted) {
  testing::TempDir dir;
  const auto socket = dir.path() / "engine.sock";
  const auto refused = [&](const std::filesystem::path& path) {
    const auto checked = check_bind_source(path, socket);
    if (checked) return false;
    EXPECT_EQ(checked.error().code, "forbidden_mount");
    EXPECT_NE(checked.error().message.find(path.string()), std::string::npos);
    return true;
  };
  for (const char* path : {"/run", "/run/docker.sock", "/var/run", "/var/run/docker.sock",
                           "/run/containerd/containerd.sock", "/run/podman/podman.sock",
                           "/run/user/1000/podman/podman.sock", "/proc", "/proc/1/root", "/sys",
                           "/sys/fs/cgroup", "/dev", "/dev/nvidia0", "/var/lib/docker",
                           "/var/lib/containers/storage", "/", "/var", "/run/../run/x"}) {
    EXPECT_TRUE(refused(path)) << path;
  }
  // The engine's socket wherever it is, and every directory above it.
  EXPECT_TRUE(refused(socket));
  EXPECT_TRUE(refused(dir.path()));
  // A link leads where it points.
  std::filesystem::create_directory_symlink("/run", dir.path() / "innocent");
  EXPECT_TRUE(refused(dir.path() / "innocent"));
  EXPECT_TRUE(refused(dir.path() / "innocent" / "docker.sock"));
  // Any socket.
  const auto other = dir.path() / "sub" / "other.sock";
  std::filesystem::create_directories(other.parent_path());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  other.string().copy(address.sun_path, sizeof(address.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_TRUE(refused(other));
  ::close(fd);

  for (const char* path : {"/data/v1", "/etc/x", "/home/gpurent/instances/i-1", "/runner",
                           "/var/lib/gpurent/volumes/v-1", "/devices", "/proceeds"}) {
    EXPECT_TRUE(check_bind_source(path, socket)) << path;
  }
  std::filesystem::create_directories(dir.path() / "sub" / "instances");
  EXPECT_TRUE(check_bind_source(dir.path() / "sub" / "instances", socket));
}

TEST(DockerApi, AnEngineThatIsNotThereIsUnavailable) {
  auto client = DockerClient::open("/tmp/gpurent-no-such-engine.sock", std::chrono::seconds(2));
  ASSERT_TRUE(client);
  const auto version = client->version();
  ASSERT_FALSE(version);
  EXPECT_EQ(version.error().kind, ErrorKind::kUnavailable);
  EXPECT_EQ(version.error().code, "engine_unavailable");
  EXPECT_NE(version.error().message.find("/tmp/gpurent-no-such-engine.sock"), std::string::npos);
  EXPECT_EQ(client->ping().error().code, "engine_unavailable");
}

class PodmanTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { service_ = PodmanService::start(&why_); }
  static void TearDownTestSuite() { service_.reset(); }
  void SetUp() override {
    ASSERT_TRUE(service_) << why_;
    auto opened = DockerClient::open(service_->socket_path());
    ASSERT_TRUE(opened);
    client_.emplace(std::move(*opened));
  }

  ContainerSpec busybox(std::string name, std::vector<std::string> command) {
    return {.name = std::move(name),
            .image = PodmanService::kImage,
            .command = std::move(command),
            .labels = {{"gpurent.test", "yes"}},
            .ulimits = {{"nofile", 1024, 1024}, {"nproc", 4096, 4096}},
            .network_mode = "host"};
  }

  bool exited(const std::string& id) {
    auto code = client_->wait(id, std::chrono::seconds(30));
    EXPECT_TRUE(code) << code.error().message;
    auto info = client_->inspect(id);
    return code && info && info->state == "exited" && info->exit_code == *code;
  }

  static inline std::unique_ptr<PodmanService> service_;
  static inline std::string why_;
  std::optional<DockerClient> client_;
};

TEST_F(PodmanTest, RunsAContainerWithItsEnvLimitsAndLabelsAndKeepsItsLogs) {
  EXPECT_TRUE(client_->ping());
  auto version = client_->version();
  ASSERT_TRUE(version) << version.error().message;
  EXPECT_FALSE(version->empty());
  ASSERT_TRUE(*client_->image_exists(PodmanService::kImage));
  EXPECT_FALSE(*client_->image_exists("localhost/gpurent-test:missing"));

  auto spec = busybox("gpurent-life", {"sh", "-c",
                                       "echo hello $GREETING; "
                                       // cgroup v2, else v1
                                       "cat /sys/fs/cgroup/memory.max 2>/dev/null || "
                                       "cat /sys/fs/cgroup/memory/memory.limit_in_bytes; "
                                       "cat /sys/fs/cgroup/pids.max 2>/dev/null || "
                                       "cat /sys/fs/cgroup/pids/pids.max; "
                                       "echo nofile $(ulimit -n); echo oops >&2; exit 3"});
  spec.env = {{"GREETING", "world"}};
  spec.labels["gpurent.instance"] = "i-life";
  spec.memory_bytes = 256 << 20;
  spec.pids_limit = 64;
  auto id = client_->create(spec);
  ASSERT_TRUE(id) << id.error().message;
  // The name is taken now.
  const auto twin = client_->create(spec);
  ASSERT_FALSE(twin);
  EXPECT_EQ(twin.error().kind, ErrorKind::kConflict) << twin.error().message;

  ASSERT_TRUE(client_->start(*id));
  ASSERT_TRUE(exited(*id));
  auto info = client_->inspect(*id);
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_EQ(info->name, "gpurent-life");
  EXPECT_EQ(info->exit_code, 3);
  EXPECT_FALSE(info->running);
  EXPECT_EQ(info->labels.at("gpurent.instance"), "i-life");

  auto logs = client_->logs(*id);
  ASSERT_TRUE(logs) << logs.error().message;
  EXPECT_NE(logs->find("hello world\n"), std::string::npos) << *logs;
  EXPECT_NE(logs->find("268435456\n"), std::string::npos) << *logs;
  EXPECT_NE(logs->find("\n64\n"), std::string::npos) << *logs;
  EXPECT_NE(logs->find("nofile 1024\n"), std::string::npos) << *logs;
  EXPECT_NE(logs->find("oops\n"), std::string::npos) << *logs;

  auto listed = client_->list("gpurent.instance=i-life");
  ASSERT_TRUE(listed) << listed.error().message;
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->front().id, *id);
  EXPECT_EQ(listed->front().name, "gpurent-life");
  EXPECT_TRUE(client_->list("gpurent.instance=nobody")->empty());

  ASSERT_TRUE(client_->remove(*id, false));
  const auto gone = client_->inspect(*id);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(gone.error().code, "no_such_container");
}

TEST_F(PodmanTest, StopSendsSigtermAndKillsWhatIgnoresIt) {
  auto polite = client_->create(busybox(
      "gpurent-polite",
      {"sh", "-c", "trap 'echo bye; exit 143' TERM; echo up; while true; do sleep 0.1; done"}));
  ASSERT_TRUE(polite) << polite.error().message;
  // PID 1 without a handler ignores SIGTERM: only the kill after the grace period ends it.
  auto stubborn = client_->create(busybox("gpurent-stubborn", {"sleep", "1000"}));
  ASSERT_TRUE(stubborn) << stubborn.error().message;
  ASSERT_TRUE(client_->start(*polite));
  ASSERT_TRUE(client_->start(*polite));  // already started: fine
  ASSERT_TRUE(client_->start(*stubborn));
  ASSERT_TRUE(eventually([&] { return client_->logs(*polite)->find("up") != std::string::npos; },
                         std::chrono::seconds(10)));

  auto stats = client_->stats(*stubborn);
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_GT(stats->memory_bytes, 0);
  EXPECT_GE(stats->pids, 1);
  // Removing a running container needs force.
  const auto busy = client_->remove(*stubborn, false);
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().kind, ErrorKind::kConflict) << busy.error().message;

  ASSERT_TRUE(client_->stop(*polite, std::chrono::seconds(10)));
  EXPECT_EQ(client_->inspect(*polite)->exit_code, 143);
  EXPECT_NE(client_->logs(*polite)->find("bye"), std::string::npos);
  ASSERT_TRUE(client_->stop(*stubborn, std::chrono::seconds(1)));
  EXPECT_EQ(client_->inspect(*stubborn)->exit_code, 137);
  ASSERT_TRUE(client_->stop(*stubborn, std::chrono::seconds(1)));  // already stopped: fine
  ASSERT_TRUE(client_->remove(*polite, true));
  ASSERT_TRUE(client_->remove(*stubborn, true));
}

TEST_F(PodmanTest, ExecRunsACommandInARunningContainerAndStreamsBothOutputs) {
  auto id = client_->create(busybox("gpurent-exec", {"sleep", "1000"}));
  ASSERT_TRUE(id) << id.error().message;
  // Not running yet: the engine refuses.
  EXPECT_FALSE(client_->exec_create(*id, {.command = {"true"}}));
  ASSERT_TRUE(client_->start(*id));

  auto exec = client_->exec_create(
      *id, {.command = {"sh", "-c", "echo out $WHO $(pwd); echo err >&2; exit 3"},
            .env = {{"WHO", "tenant"}},
            .working_dir = "/tmp"});
  ASSERT_TRUE(exec) << exec.error().message;
  std::string out, err;
  auto code = client_->exec_start(
      *exec,
      [&](int stream, std::string_view bytes) {
        (stream == 2 ? err : out).append(bytes);
        return true;
      },
      std::chrono::seconds(30));
  ASSERT_TRUE(code) << code.error().message;
  EXPECT_EQ(*code, 3);
  EXPECT_EQ(out, "out tenant /tmp\n");
  EXPECT_EQ(err, "err\n");

  auto missing = client_->exec_create(*id, {.command = {"no-such-program"}});
  ASSERT_TRUE(missing) << missing.error().message;  // the engine finds out when it starts
  auto failed = client_->exec_start(
      *missing, [](int, std::string_view) { return true; }, std::chrono::seconds(30));
  ASSERT_TRUE(failed) << failed.error().message;
  EXPECT_EQ(*failed, 127);
  // `wait` on a container that keeps running gives up at its timeout, saying so.
  auto still = client_->wait(*id, std::chrono::milliseconds(300));
  ASSERT_FALSE(still);
  EXPECT_EQ(still.error().code, "timeout");
  EXPECT_TRUE(client_->remove(*id, /*force=*/true));
}

// What the hardening amounts to in a real container: no new privileges, and the seven capabilities
// (0xfb: no NET_RAW, bit 13, no SYS_ADMIN, bit 21, ...) as its effective, permitted and bounding
// sets, in the container and in a command run in it; an ordinary workload still writes, chowns and
// chmods files as root.
TEST_F(PodmanTest, ContainersRunWithoutNewPrivilegesAndWithFewCapabilities) {
  auto spec =
      busybox("gpurent-hardened",
              {"sh", "-c",
               "grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs):' /proc/self/status; "
               "touch /tmp/f && busybox chown 1000:1000 /tmp/f && busybox chmod 600 /tmp/f && "
               "echo chowned; exec sleep 1000"});
  auto id = client_->create(spec);
  ASSERT_TRUE(id) << id.error().message;
  ASSERT_TRUE(client_->start(*id));
  std::string logs;
  ASSERT_TRUE(eventually(
      [&] {
        logs = client_->logs(*id).value_or("");
        return logs.find("chowned") != std::string::npos;
      },
      std::chrono::seconds(10)))
      << logs;
  for (const char* line : {"CapEff:\t00000000000000fb\n", "CapPrm:\t00000000000000fb\n",
                           "CapBnd:\t00000000000000fb\n", "NoNewPrivs:\t1\n"}) {
    EXPECT_NE(logs.find(line), std::string::npos) << line << logs;
  }

  // A command run in it has the same limits.
  auto exec = client_->exec_create(
      *id, {.command = {"grep", "-E", "^(CapEff|NoNewPrivs):", "/proc/self/status"}});
  ASSERT_TRUE(exec) << exec.error().message;
  std::string out;
  auto code = client_->exec_start(
      *exec,
      [&](int, std::string_view bytes) {
        out.append(bytes);
        return true;
      },
      std::chrono::seconds(30));
  ASSERT_TRUE(code) << code.error().message;
  EXPECT_EQ(out, "CapEff:\t00000000000000fb\nNoNewPrivs:\t1\n");
  EXPECT_TRUE(client_->remove(*id, /*force=*/true));
}

TEST_F(PodmanTest, AForbiddenMountIsRefusedBeforeTheEngineIsAsked) {
  for (const std::string& host :
       {std::string("/run"), std::string("/proc"), std::string("/var/run"), service_->socket_path(),
        service_->dir().string()}) {
    auto spec = busybox("gpurent-sockets", {"true"});
    spec.mounts = {{host, "/mnt", true}};
    const auto created = client_->create(spec);
    ASSERT_FALSE(created) << host;
    EXPECT_EQ(created.error().code, "forbidden_mount") << created.error().message;
  }
  // Nothing was created.
  const auto found = client_->inspect("gpurent-sockets");
  ASSERT_FALSE(found);
  EXPECT_EQ(found.error().code, "no_such_container");
}

TEST_F(PodmanTest, MissingImagesAndContainersAreClearErrors) {
  auto spec = busybox("gpurent-none", {"true"});
  spec.image = "localhost/gpurent-test:missing";
  const auto missing = client_->create(spec);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, ErrorKind::kNotFound) << missing.error().message;
  EXPECT_EQ(missing.error().code, "no_such_image");
  for (const auto& error : {client_->start("nope").error(), client_->kill("nope").error(),
                            client_->remove("nope", true).error()}) {
    EXPECT_EQ(error.code, "no_such_container") << error.message;
  }
  // No network here: the pull fails, saying which image.
  const auto pulled = client_->pull("registry.invalid/gpurent/none:1");
  ASSERT_FALSE(pulled);
  EXPECT_EQ(pulled.error().code, "image_pull_failed");
  EXPECT_NE(pulled.error().message.find("registry.invalid/gpurent/none:1"), std::string::npos);
}

}  // namespace
}  // namespace gpurent::agent
