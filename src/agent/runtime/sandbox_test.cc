// The process runtime's sandbox, tried as a neighbouring tenant would: each test runs real
// workloads as root's sandboxed runs and checks what they can and cannot reach. Skipped where the
// host cannot sandbox (not root, no namespaces): there the agent says so and runs one tenant's
// process runs at a time (tested at the end).
#include "agent/runtime/sandbox.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "agent/runtime/cgroups.h"
#include "agent/runtime/process_runtime.h"
#include "agent/runtime/workdir.h"
#include "agent/runtime/workload_users.h"
#include "agent/test_util.h"

namespace gpurent::agent {
namespace {

using model::WorkloadPhase;
using testing::eventually;
using testing::TempDir;

constexpr IdRange kTestIds{510000, 510099};

using testing::read_text;

model::WorkloadSpec shell(std::string instance_id, std::string tenant_id, std::string script) {
  auto spec = testing::shell(std::move(instance_id), std::move(script));
  spec.tenant_id = std::move(tenant_id);
  return spec;
}

void write_text(const std::filesystem::path& path, std::string_view text) {
  std::ofstream(path) << text;
}

// Whether a process with this command line (arguments joined by spaces) runs on the host.
bool process_running(std::string_view command_line) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    auto text = read_text(entry.path() / "cmdline");
    std::replace(text.begin(), text.end(), '\0', ' ');
    if (text == std::string(command_line) + " ") return true;
  }
  return false;
}

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto probed = probe_sandbox(); !probed) GTEST_SKIP() << probed.error().message;
    data_ = dir_.path() / "data";
    instances_ = dir_.path() / "instances";
  }

  std::unique_ptr<ProcessRuntime> open_runtime(std::optional<Cgroups> cgroups = std::nullopt) {
    auto runtime = ProcessRuntime::open({.data_dir = data_,
                                         .shim_executable = "/proc/self/exe",
                                         .stop_grace = std::chrono::seconds(5),
                                         .instances_dir = instances_,
                                         .sandbox = SandboxOptions{kTestIds, std::move(cgroups)}});
    EXPECT_TRUE(runtime) << runtime.error().message;
    return runtime ? std::move(*runtime) : nullptr;
  }

  const Workload* wait_exit(ProcessRuntime& runtime, const WorkloadKey& key) {
    const Workload* exited = testing::exited_run(runtime, key);
    EXPECT_NE(exited, nullptr) << key.instance_id << " did not exit";
    return exited;
  }

  // Runs a script as a run of its own and returns its output (stdout and stderr).
  std::string run(ProcessRuntime& runtime, const model::WorkloadSpec& spec, int* exit_code) {
    EXPECT_TRUE(runtime.start(spec));
    const Workload* w = wait_exit(runtime, {spec.instance_id, spec.run});
    if (!w) return "";
    *exit_code = w->exit_code.value_or(-1);
    return read_text(w->log_path);
  }

  TempDir dir_;
  std::filesystem::path data_, instances_;
};

TEST_F(SandboxTest, ARunIsItsInstancesOwnUserWithoutAnyCapability) {
  auto runtime = open_runtime();
  int code = 0;
  const auto out = run(*runtime,
                       shell("i-who", "t-1",
                             "id -u; id -g; grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status; "
                             "grep NoNewPrivs /proc/self/status; pwd; echo $HOME"),
                       &code);
  EXPECT_EQ(code, 0) << out;
  const auto home = runtime->instance_dir("i-who").string();
  EXPECT_EQ(out,
            fmt::format("510000\n510000\nCapInh:\t0000000000000000\nCapPrm:\t0000000000000000\n"
                        "CapEff:\t0000000000000000\nCapBnd:\t0000000000000000\n"
                        "CapAmb:\t0000000000000000\nNoNewPrivs:\t1\n{}\n{}\n",
                        home, home));
  struct stat st {};
  ASSERT_EQ(::stat(home.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 510000u);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  // Its home is outside the agent's data directory, which only root may enter.
  EXPECT_FALSE(home.starts_with(data_.string()));
  ASSERT_EQ(::stat(data_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u);
}

TEST_F(SandboxTest, ARunCannotReadTheAgentsFilesNorAnotherInstancesHome) {
  auto runtime = open_runtime();
  write_text(data_ / "identity.json", R"({"credential":"gnc_secret","node_id":"n-1"})");
  // The victim: another tenant's instance with a file in its home and a run still going.
  ASSERT_TRUE(runtime->start(shell("i-victim", "t-victim", "echo private > secret.txt; sleep 30")));
  ASSERT_TRUE(
      eventually([&] { return std::filesystem::exists(instances_ / "i-victim/secret.txt"); }));
  const auto victim_home = (instances_ / "i-victim").string();
  int code = 0;
  const auto out = run(
      *runtime,
      shell("i-thief", "t-thief",
            fmt::format("ls {1} | tr '\\n' ' '; echo '|'; cat {0}/identity.json; ls {0}; "
                        "ls {0}/workloads; cat {2}/secret.txt; ls {2}; cat ../i-victim/secret.txt; "
                        "echo done",
                        data_.string(), instances_.string(), victim_home)),
      &code);
  EXPECT_EQ(code, 0) << out;
  // Of all homes, it sees its own only.
  EXPECT_TRUE(out.starts_with("i-thief |\n")) << out;
  EXPECT_EQ(out.find("gnc_secret"), std::string::npos) << out;
  EXPECT_EQ(out.find("private"), std::string::npos) << out;
  EXPECT_EQ(out.find("launch.json"), std::string::npos) << out;
  EXPECT_NE(out.find("done"), std::string::npos) << out;
  runtime->stop({"i-victim", 1});
  wait_exit(*runtime, {"i-victim", 1});
}

TEST_F(SandboxTest, ARunSeesAndSignalsOnlyItsOwnProcesses) {
  auto runtime = open_runtime();
  ASSERT_TRUE(runtime->start(shell("i-victim", "t-victim", "sleep 30")));
  // Every pid of the node that is not the thief's: the victim's shim and workload among them.
  // (Above 100: the thief's own namespace numbers its few processes from 1.)
  std::string pids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (std::all_of(name.begin(), name.end(), ::isdigit) && std::stoi(name) > 100) {
      pids += name + " ";
    }
  }
  int code = 0;
  const auto out =
      run(*runtime,
          shell("i-thief", "t-thief",
                fmt::format("ls /proc | grep -E '^[0-9]+$' | tr '\\n' ' '; echo; "
                            "for p in {}; do kill -9 $p 2>/dev/null && echo killed $p; "
                            "done; echo done",
                            pids)),
          &code);
  EXPECT_EQ(code, 0) << out;
  // PID 1 (the sandbox's init), the shell and its children: nothing of the node's.
  const auto first_line = out.substr(0, out.find('\n'));
  EXPECT_TRUE(first_line.starts_with("1 ")) << out;
  EXPECT_LT(std::count(first_line.begin(), first_line.end(), ' '), 6) << out;
  EXPECT_EQ(out.find("killed"), std::string::npos) << out;
  runtime->poll();
  ASSERT_NE(runtime->find({"i-victim", 1}), nullptr);
  EXPECT_NE(runtime->find({"i-victim", 1})->phase, WorkloadPhase::kExited);
  runtime->stop({"i-victim", 1});
  wait_exit(*runtime, {"i-victim", 1});
}

TEST_F(SandboxTest, ARunWritesOnlyInItsHomeItsPrivateTmpAndItsVolumes) {
  auto runtime = open_runtime();
  auto writer =
      shell("i-a", "t-1",
            fmt::format("echo mine > /tmp/left; echo x > {0}/planted; echo x > {1}/planted;"
                        " echo x > /etc/planted; echo shared > data/file; echo done",
                        data_.string(), instances_.string()));
  writer.volumes = {{"v-1", "/data"}};
  int code = 0;
  auto out = run(*runtime, writer, &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("done"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(data_ / "planted"));
  EXPECT_FALSE(std::filesystem::exists(instances_ / "planted"));
  EXPECT_FALSE(std::filesystem::exists("/etc/planted"));
  EXPECT_EQ(read_text(volume_dir(data_, "v-1") / "file"), "shared\n");

  // The same tenant's other instance (another user, the same group) shares the volume but not
  // the first one's /tmp.
  auto reader = shell(
      "i-b", "t-1", "cat data/file; cat /tmp/left; echo more >> data/file; echo $GPURENT_VOLUMES");
  reader.volumes = {{"v-1", "/data"}};
  out = run(*runtime, reader, &code);
  EXPECT_EQ(out.find("mine"), std::string::npos) << out;
  EXPECT_NE(out.find("shared\n"), std::string::npos) << out;
  EXPECT_NE(out.find(fmt::format("v-1={}/data", runtime->instance_dir("i-b").string())),
            std::string::npos)
      << out;
  EXPECT_EQ(read_text(volume_dir(data_, "v-1") / "file"), "shared\nmore\n");
}

TEST_F(SandboxTest, AVolumeLinkInTheHomeCannotRedirectTheBind) {
  auto runtime = open_runtime();
  int code = 0;
  // The tenant leaves a link where its volume goes, pointing at the agent's files.
  auto planter = shell("i-a", "t-1", fmt::format("ln -s {} data; echo planted", data_.string()));
  run(*runtime, planter, &code);
  auto spec = shell("i-a", "t-1", "ls data");
  spec.run = 2;
  spec.volumes = {{"v-1", "/data"}};
  const auto out = run(*runtime, spec, &code);
  EXPECT_NE(code, 0) << out;
  EXPECT_EQ(out.find("workloads"), std::string::npos) << out;
}

TEST_F(SandboxTest, ExitStatusesAndStopsPassThroughTheSandboxsInit) {
  auto runtime = open_runtime();
  int code = 0;
  run(*runtime, shell("i-seven", "t-1", "exit 7"), &code);
  EXPECT_EQ(code, 7);
  run(*runtime, shell("i-term", "t-1", "kill -TERM $$"), &code);
  EXPECT_EQ(code, 143);
  EXPECT_EQ(runtime->find({"i-term", 1})->message, "killed by signal SIGTERM");
  auto missing = shell("i-missing", "t-1", "");
  missing.command = {"/no/such/program"};
  run(*runtime, missing, &code);
  EXPECT_EQ(code, 127);
  EXPECT_EQ(runtime->find({"i-missing", 1})->message,
            "cannot execute '/no/such/program': No such file or directory");

  // A stop's SIGTERM reaches the workload (its trap runs), and a daemon it left goes with it.
  // The daemon says when it is up: a SIGTERM that reached it while it was still the trapping
  // shell's fork, before its exec, would run the shell's trap in it and be lost.
  ASSERT_TRUE(runtime->start(shell("i-stop", "t-1",
                                   "trap 'echo got term; exit 0' TERM; "
                                   "setsid sh -c 'echo daemon-up; exec sleep 300' & "
                                   "echo started; while true; do sleep 0.1; done")));
  const auto log = data_ / "workloads" / "i-stop.1" / "output.log";
  ASSERT_TRUE(eventually([&] {
    const std::string text = read_text(log);
    return text.find("started") != std::string::npos && text.find("daemon-up") != std::string::npos;
  }));
  runtime->stop({"i-stop", 1});
  const Workload* w = wait_exit(*runtime, {"i-stop", 1});
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->exit_code, 0);
  EXPECT_NE(read_text(log).find("got term"), std::string::npos);
  EXPECT_TRUE(eventually([] { return !process_running("sleep 300"); }));
}

TEST_F(SandboxTest, ARunIsHeldToItsCpuAndMemoryThroughItsCgroups) {
  std::string why_not;
  auto cgroups = Cgroups::detect_host(&why_not);
  if (!cgroups) GTEST_SKIP() << why_not;
  auto runtime = open_runtime(cgroups);
  auto spec = shell("i-limited", "t-1", "cat /proc/self/cgroup");
  spec.cpu = 2;
  spec.memory_gb = 1;
  int code = 0;
  const auto out = run(*runtime, spec, &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("i-limited.1"), std::string::npos) << out;
  // The limits are written where the run was.
  auto launch = read_launch(data_ / "workloads" / "i-limited.1");
  ASSERT_TRUE(launch);
  ASSERT_TRUE(launch->sandbox);
  ASSERT_FALSE(launch->sandbox->cgroups.empty());
  bool memory_seen = false;
  for (const auto& dir : launch->sandbox->cgroups) {
    for (const char* file : {"memory.max", "memory.limit_in_bytes"}) {
      if (std::filesystem::exists(std::filesystem::path(dir) / file)) {
        memory_seen = true;
        EXPECT_EQ(read_text(std::filesystem::path(dir) / file), "1073741824\n");
      }
    }
  }
  EXPECT_TRUE(memory_seen);
  // Forgetting the run deletes its cgroups.
  ASSERT_TRUE(runtime->forget({"i-limited", 1}));
  for (const auto& dir : launch->sandbox->cgroups) EXPECT_FALSE(std::filesystem::exists(dir));

  // Beyond its memory the kernel ends the run.
  auto greedy =
      shell("i-greedy", "t-1", "python3 -c 'x = b\"a\" * (1536 << 20); print(\"survived\")'");
  greedy.memory_gb = 1;
  const auto greedy_out = run(*runtime, greedy, &code);
  EXPECT_EQ(code, 137) << greedy_out;
  EXPECT_EQ(greedy_out.find("survived"), std::string::npos);
}

TEST_F(SandboxTest, AWorkdirIsUnpackedOnceAsTheInstancesUserAndStaysInItsHome) {
  auto runtime = open_runtime();
  const auto project = dir_.path() / "project";
  std::filesystem::create_directories(project / "src");
  write_text(project / "src" / "train.py", "print('hello')\n");
  const auto archive = workdir_archive(data_, "u-1");
  std::filesystem::create_directories(archive.parent_path());
  ASSERT_EQ(
      std::system(fmt::format("tar -czf {} -C {} src", archive.string(), project.string()).c_str()),
      0);
  auto spec = shell("i-code", "t-1", "cat src/train.py; echo changed > src/train.py");
  spec.workdir = "u-1";
  int code = 0;
  auto out = run(*runtime, spec, &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "print('hello')\n");
  // Unpacked once: the next run sees what the first one changed.
  spec.run = 2;
  spec.command = {"sh", "-c", "cat src/train.py 2>/dev/null; ls"};
  out = run(*runtime, spec, &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out.find("hello"), std::string::npos) << out;

  // An archive whose member climbs out of the home writes nothing there.
  ASSERT_EQ(
      std::system(fmt::format("tar -czf {} -C {} src --transform='s,^src/train.py,../escaped,'",
                              workdir_archive(data_, "u-evil").string(), project.string())
                      .c_str()),
      0);
  auto evil = shell("i-evil", "t-1", "true");
  evil.workdir = "u-evil";
  [[maybe_unused]] const auto started = runtime->start(evil);
  EXPECT_FALSE(std::filesystem::exists(instances_ / "escaped"));
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "escaped"));

  // A run whose archive cannot be unpacked fails to start, and says why.
  write_text(workdir_archive(data_, "u-bad"), "not a tar.gz");
  auto bad = shell("i-bad", "t-1", "true");
  bad.workdir = "u-bad";
  const auto refused = runtime->start(bad);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "workdir_unpack_failed");
}

TEST_F(SandboxTest, AWorkdirsFilesBelongToTheInstancesUser) {
  auto runtime = open_runtime();
  const auto project = dir_.path() / "project";
  std::filesystem::create_directories(project);
  write_text(project / "data.txt", "payload\n");
  const auto archive = workdir_archive(data_, "u-2");
  std::filesystem::create_directories(archive.parent_path());
  ASSERT_EQ(
      std::system(
          fmt::format("tar -czf {} -C {} data.txt", archive.string(), project.string()).c_str()),
      0);
  auto spec = shell("i-own", "t-1", "stat -c %u data.txt; cat data.txt");
  spec.workdir = "u-2";
  int code = 0;
  const auto out = run(*runtime, spec, &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "510000\npayload\n");
}

// --- Without a sandbox: one tenant at a time -------------------------------------------------

TEST(UnsandboxedRuntimeTest, RunsOneTenantsWorkAtATime) {
  TempDir dir;
  auto runtime = ProcessRuntime::open({dir.path(), "/proc/self/exe", std::chrono::seconds(5)});
  ASSERT_TRUE(runtime);
  ASSERT_TRUE((*runtime)->start(shell("i-a", "t-a", "sleep 30")));
  ASSERT_TRUE((*runtime)->start(shell("i-a2", "t-a", "exit 0")));
  const auto refused = (*runtime)->start(shell("i-b", "t-b", "exit 0"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "tenant_isolation_unavailable");
  (*runtime)->stop({"i-a", 1});
  ASSERT_TRUE(eventually([&] {
    (*runtime)->poll();
    return (*runtime)->find({"i-a", 1})->phase == WorkloadPhase::kExited &&
           (*runtime)->find({"i-a2", 1})->phase == WorkloadPhase::kExited;
  }));
  EXPECT_TRUE((*runtime)->start(shell("i-b", "t-b", "exit 0")));
}

// --- Workload users ---------------------------------------------------------------------------

TEST(WorkloadUsersTest, GivesEachInstanceAndTenantOneIdForGood) {
  TempDir dir;
  {
    auto users = WorkloadUsers::open(dir.path(), {300000, 300002});
    ASSERT_TRUE(users);
    EXPECT_EQ(users->uid_of_instance("i-1"), 300000u);
    EXPECT_EQ(users->uid_of_instance("i-2"), 300001u);
    EXPECT_EQ(users->uid_of_instance("i-1"), 300000u);
    EXPECT_EQ(users->gid_of_tenant("t-1"), 300000u);  // gids are another name space
  }
  // A torn last line (a crash before its sync) is skipped: its id was never used.
  std::ofstream(dir.path() / kWorkloadUsersFile, std::ios::app) << "instance i-torn 3000";
  auto users = WorkloadUsers::open(dir.path(), {300000, 300002});
  ASSERT_TRUE(users);
  EXPECT_EQ(users->uid_of_instance("i-2"), 300001u);
  EXPECT_EQ(users->uid_of_instance("i-3"), 300002u);
  const auto exhausted = users->uid_of_instance("i-4");
  ASSERT_FALSE(exhausted);
  EXPECT_EQ(exhausted.error().code, "workload_ids_exhausted");
  EXPECT_FALSE(parse_id_range("0-100"));
  EXPECT_FALSE(parse_id_range("5000-4000"));
  EXPECT_FALSE(parse_id_range("5000"));
  EXPECT_EQ(parse_id_range("5000-6000")->last, 6000u);
}

// Each tenant's VMs get 65536 ids of their own after the range, kept as the others are; a tenant
// without any asked for is given none.
TEST(WorkloadUsersTest, GivesEachTenantsGuestsABlockOfTheirOwnAfterTheRange) {
  TempDir dir;
  {
    auto users = WorkloadUsers::open(dir.path(), {300000, 300099});
    ASSERT_TRUE(users);
    EXPECT_EQ(users->given_guest_ids("t-1"), std::nullopt);
    EXPECT_EQ(users->guest_ids_of_tenant("t-1"), 300100u);
    EXPECT_EQ(users->guest_ids_of_tenant("t-2"), 300100u + kGuestIdCount);
    EXPECT_EQ(users->given_guest_ids("t-1"), 300100u);
    EXPECT_EQ(users->gid_of_tenant("t-1"), 300000u) << "a tenant's group is another pool";
  }
  auto users = WorkloadUsers::open(dir.path(), {300000, 300099});
  ASSERT_TRUE(users);
  EXPECT_EQ(users->given_guest_ids("t-2"), 300100u + kGuestIdCount);
  EXPECT_EQ(users->guest_ids_of_tenant("t-3"), 300100u + 2 * kGuestIdCount);

  // The last block ends at 2^31 - 1: a range ending two blocks below it leaves room for two.
  const IdRange high{0x7fff0000 - 2 * kGuestIdCount, 0x7fff0000 - kGuestIdCount - 1};
  EXPECT_EQ(guest_id_blocks(high), 2u);
  EXPECT_EQ(guest_id_blocks({300000, 0x7fffffff}), 0u);
  EXPECT_EQ(guest_id_blocks(kDefaultWorkloadIds), 32749u);
  TempDir other;
  auto crowded = WorkloadUsers::open(other.path(), high);
  ASSERT_TRUE(crowded);
  EXPECT_EQ(crowded->guest_ids_of_tenant("t-1"), 0x7fff0000u - kGuestIdCount);
  EXPECT_EQ(crowded->guest_ids_of_tenant("t-2"), 0x7fff0000u);
  const auto exhausted = crowded->guest_ids_of_tenant("t-3");
  ASSERT_FALSE(exhausted);
  EXPECT_EQ(exhausted.error().code, "workload_ids_exhausted");
  EXPECT_NE(exhausted.error().message.find("--vm-shares 9p"), std::string::npos);
}

// An operator may change --workload-ids: ids given before stay their owners' alone, whichever way.
TEST(WorkloadUsersTest, AChangedRangeNeverGivesAnIdTwice) {
  TempDir dir;
  {
    auto users = WorkloadUsers::open(dir.path(), {300000, 300002});
    ASSERT_TRUE(users);
    for (const char* instance : {"i-1", "i-2", "i-3"})
      ASSERT_TRUE(users->uid_of_instance(instance));
  }
  {
    // Its end lowered below uids given: the first guest block starts past them.
    auto users = WorkloadUsers::open(dir.path(), {300000, 300000});
    ASSERT_TRUE(users);
    EXPECT_EQ(users->guest_ids_of_tenant("t-1"), 300003u);
  }
  // Its end raised into that block: no instance gets one of its ids.
  auto users = WorkloadUsers::open(dir.path(), {300000, 400000});
  ASSERT_TRUE(users);
  const auto next = users->uid_of_instance("i-4");
  ASSERT_FALSE(next) << *next;
  EXPECT_EQ(next.error().code, "workload_ids_exhausted");
  EXPECT_EQ(users->gid_of_tenant("t-1"), 300000u) << "gids below the block are still given";
}

// --- cgroup v2, on a tree made to look like one -----------------------------------------------

TEST(CgroupsTest, DelegatesV2ControllersAndWritesARunsLimits) {
  TempDir dir;
  const auto own = dir.path() / "system.slice/agent.service";
  for (const auto& sub : {own, own / "agent", own / "workloads", own / "workloads/i-1.1"}) {
    std::filesystem::create_directories(sub);
  }
  write_text(own / "cgroup.controllers", "cpuset cpu io memory pids\n");
  for (const auto& file :
       {own / "cgroup.subtree_control", own / "agent/cgroup.procs",
        own / "workloads/cgroup.subtree_control", own / "workloads/i-1.1/cpu.max",
        own / "workloads/i-1.1/memory.max", own / "workloads/i-1.1/pids.max"}) {
    write_text(file, "");
  }
  std::string why_not;
  const auto cgroups =
      Cgroups::detect(fmt::format("proc /proc proc rw 0 0\ncgroup2 {} cgroup2 rw,nosuid 0 0\n",
                                  dir.path().string()),
                      "0::/system.slice/agent.service\n", &why_not);
  ASSERT_TRUE(cgroups) << why_not;
  EXPECT_EQ(cgroups->version(), Cgroups::Version::kV2);
  EXPECT_EQ(read_text(own / "agent/cgroup.procs"), std::to_string(::getpid()));
  EXPECT_EQ(read_text(own / "cgroup.subtree_control"), "+cpu +memory +pids");
  EXPECT_EQ(read_text(own / "workloads/cgroup.subtree_control"), "+cpu +memory +pids");
  const auto dirs = cgroups->create("i-1.1", {2, int64_t{3} << 30});
  ASSERT_TRUE(dirs) << dirs.error().message;
  EXPECT_EQ(*dirs, std::vector<std::string>{(own / "workloads/i-1.1").string()});
  EXPECT_EQ(read_text(own / "workloads/i-1.1/cpu.max"), "200000 100000");
  EXPECT_EQ(read_text(own / "workloads/i-1.1/memory.max"), "3221225472");
  EXPECT_EQ(read_text(own / "workloads/i-1.1/pids.max"), "32768");
}

TEST(CgroupsTest, SaysWhyWhenNoHierarchyOffersCpuAndMemory) {
  TempDir dir;
  write_text(dir.path() / "cgroup.controllers", "pids\n");
  std::string why_not;
  EXPECT_FALSE(Cgroups::detect(fmt::format("cgroup2 {} cgroup2 rw 0 0\n", dir.path().string()),
                               "0::/\n", &why_not));
  EXPECT_NE(why_not.find("no cpu and memory controllers"), std::string::npos) << why_not;
}

TEST(SandboxJsonTest, RoundTripsAndRefusesRelativePaths) {
  const Sandbox sandbox{
      510000, 510001, "/w/i-1", {"/d"}, {{"/d/volumes/v-1", "/w/i-1/data"}}, {"/sys/fs/cgroup/x"}};
  auto parsed = parse_sandbox(sandbox_json(sandbox));
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->uid, 510000u);
  EXPECT_EQ(parsed->binds.size(), 1u);
  EXPECT_EQ(parsed->binds[0].target, "/w/i-1/data");
  EXPECT_EQ(parsed->cgroups, sandbox.cgroups);
  Json relative = sandbox_json(sandbox);
  relative["hidden"] = {"relative"};
  EXPECT_FALSE(parse_sandbox(relative));
  Json root = sandbox_json(sandbox);
  root["uid"] = 0;
  EXPECT_FALSE(parse_sandbox(root));
}

}  // namespace
}  // namespace gpurent::agent
