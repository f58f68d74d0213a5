// `gpurent cp` on the node: where a copy goes, and unpacking as the right user without leaving the
// destination (runtime/workdir.h unpack_archive).
#include "agent/file_copy.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "agent/runtime/volumes.h"
#include "agent/runtime/workdir.h"
#include "agent/runtime/workload_users.h"
#include "agent/test_util.h"

namespace gpurent::agent {
namespace {

using Names = std::vector<std::string>;

TEST(RunCopyDestinationTest, IsTheHomeOrAVolumeBelowIt) {
  const std::filesystem::path home = "/instances/i-1";
  const std::vector<std::string> volumes = {"/instances/i-1/data", "/elsewhere/v-2"};
  auto at = [&](std::string_view path) { return run_copy_destination(home, volumes, path); };
  EXPECT_EQ(at("")->root, home);
  EXPECT_EQ(at("")->below, Names{});
  EXPECT_EQ(at("")->shown, "/instances/i-1");
  EXPECT_EQ(at("a/b")->below, (Names{"a", "b"}));
  EXPECT_EQ(at("a/b")->shown, "/instances/i-1/a/b");
  EXPECT_EQ(at("/instances/i-1/x")->below, Names{"x"});
  // A volume is entered where the run finds it, by its mount path or by the path below the home.
  for (const std::string_view path : {"/data/x", "data/x", "/instances/i-1/data/x"}) {
    const auto destination = at(path);
    ASSERT_TRUE(destination) << path;
    EXPECT_EQ(destination->root, "/instances/i-1/data") << path;
    EXPECT_EQ(destination->below, Names{"x"}) << path;
  }
  EXPECT_EQ(at("/etc/cron.d").error().code, "path_outside_instance");
  EXPECT_EQ(at("/elsewhere/v-2").error().code, "path_outside_instance");
  EXPECT_EQ(at("../i-2").error().code, "invalid_path");
}

TEST(TarListingTest, CountsWhatTarListsInAnyPieces) {
  const std::string listing =
      "drwxr-xr-x 0/0               0 2026-12-03 16:07 ./\n"
      "lrwxrwxrwx 0/0               0 2026-12-03 16:07 ./link -> sub\n"
      "drwxr-xr-x 0/0               0 2026-12-03 16:07 ./sub/\n"
      "-rw-r--r-- 0/0               6 2026-12-03 16:07 ./sub/a b.txt\n"
      "-rw-r--r-- 0/0            1234 2026-12-03 16:07 ./new\\nline\n"
      "hrw-r--r-- 0/0               0 2026-12-03 16:07 ./hard link to ./sub/a b.txt\n";
  TarListing counted;
  for (size_t i = 0; i < listing.size(); i += 7) counted.feed(listing.substr(i, 7));
  const auto result = counted.finish();
  EXPECT_EQ(result.files, 2);
  EXPECT_EQ(result.directories, 1);
  EXPECT_EQ(result.links, 2);
  EXPECT_EQ(result.bytes, 1240);
  EXPECT_EQ(result.names, (Names{"link", "sub/", "sub/a b.txt", "new\\nline", "hard"}));
}

class UnpackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(project_ / "src");
    std::ofstream(project_ / "src" / "train.py") << "print('hi')\n";
    std::filesystem::create_directories(root_);
  }

  std::filesystem::path archive(std::string_view name, std::string_view tar_options = "") {
    const auto path = dir_.path() / name;
    EXPECT_EQ(std::system(fmt::format("tar -czf {} {} -C {} src", path.string(), tar_options,
                                      project_.string())
                              .c_str()),
              0);
    return path;
  }

  // Sandboxed copies' users and groups, as the agent keeps them; null when they cannot be opened.
  std::shared_ptr<WorkloadUsers> workload_users() {
    auto users = WorkloadUsers::open(dir_.path(), {320000, 320099});
    EXPECT_TRUE(users) << users.error().message;
    return users ? std::make_shared<WorkloadUsers>(std::move(*users)) : nullptr;
  }

  testing::TempDir dir_;
  const std::filesystem::path project_ = dir_.path() / "project";
  const std::filesystem::path root_ = dir_.path() / "home";
};

TEST_F(UnpackTest, UnpacksIntoDirectoriesItMakesAndSaysWhatItWrote) {
  const auto unpacked = unpack_archive(archive("a.tgz"), {.root = root_, .below = {"x", "y"}});
  ASSERT_TRUE(unpacked) << unpacked.error().message;
  EXPECT_EQ(unpacked->files, 1);
  EXPECT_EQ(unpacked->directories, 1);
  EXPECT_EQ(unpacked->bytes, 12);
  EXPECT_EQ(unpacked->names, (Names{"src/", "src/train.py"}));
  EXPECT_TRUE(std::filesystem::exists(root_ / "x" / "y" / "src" / "train.py"));
}

TEST_F(UnpackTest, NeverLeavesTheDestination) {
  const auto outside = dir_.path() / "outside";
  std::filesystem::create_directories(outside);
  // A member that climbs out is refused by tar.
  const auto climbing = unpack_archive(
      archive("evil.tgz", "--transform='s,^src/train.py,../../escaped,'"), {.root = root_});
  ASSERT_FALSE(climbing);
  EXPECT_EQ(climbing.error().code, "unpack_failed");
  EXPECT_NE(climbing.error().message.find("'..'"), std::string::npos) << climbing.error().message;
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "escaped"));
  EXPECT_FALSE(std::filesystem::exists(outside.parent_path().parent_path() / "escaped"));
  // A link in the destination, at its end or along it, is refused, not followed.
  std::filesystem::create_directory_symlink(outside, root_ / "link");
  std::filesystem::create_directories(root_ / "real");
  std::filesystem::create_directory_symlink("../link", root_ / "real" / "deeper");
  for (const Names& below : {Names{"link"}, Names{"real", "deeper", "x"}}) {
    const auto refused = unpack_archive(archive("a.tgz"), {.root = root_, .below = below});
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, "invalid_destination");
    EXPECT_NE(refused.error().message.find("symbolic link"), std::string::npos);
  }
  EXPECT_TRUE(std::filesystem::is_empty(outside));
  // Not an archive: tar's complaint comes back.
  std::ofstream(dir_.path() / "bad.tgz") << "not a tar.gz";
  const auto bad = unpack_archive(dir_.path() / "bad.tgz", {.root = root_});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, "unpack_failed");
}

TEST_F(UnpackTest, WritesAsTheUserItIsGivenAndOnlyWhereThatUserMay) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to change users";
  constexpr uid_t kUid = 310001;
  constexpr gid_t kGid = 310002;
  ASSERT_EQ(::chown(root_.c_str(), kUid, kGid), 0);
  const auto unpacked = unpack_archive(
      archive("a.tgz"),
      {.root = root_, .below = {"made"}, .user = WorkdirUser{kUid, kGid}, .umask = 0007});
  ASSERT_TRUE(unpacked) << unpacked.error().message;
  struct stat st {};
  ASSERT_EQ(::stat((root_ / "made" / "src" / "train.py").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kUid);
  EXPECT_EQ(st.st_gid, kGid);
  EXPECT_EQ(st.st_mode & 0007, 0u);  // the umask
  // A directory of root's, there already, stays root's: the user cannot write into it.
  std::filesystem::create_directories(root_ / "roots");
  const auto refused = unpack_archive(
      archive("a.tgz"), {.root = root_, .below = {"roots"}, .user = WorkdirUser{kUid, kGid}});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "unpack_failed");
  EXPECT_TRUE(std::filesystem::is_empty(root_ / "roots"));
}

TEST_F(UnpackTest, AVolumeCopyMakesTheVolumeAndWritesAsItsUserInTheTenantsGroup) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to change users";
  const auto shared = workload_users();
  ASSERT_NE(shared, nullptr);
  const auto data_dir = dir_.path() / "data";
  const auto copied =
      copy_into_volume(data_dir, "v-1", "t-1", shared, archive("a.tgz"), "/sets/one");
  ASSERT_TRUE(copied) << copied.error().message;
  EXPECT_EQ(copied->path, "/sets/one");
  const auto volume = volume_dir(data_dir, "v-1");
  struct stat st {};
  ASSERT_EQ(::stat(volume.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 02770u);
  EXPECT_EQ(st.st_gid, *shared->gid_of_tenant("t-1"));
  ASSERT_EQ(::stat((volume / "sets" / "one" / "src" / "train.py").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, *shared->uid_of_instance("v-1"));
  EXPECT_EQ(st.st_gid, *shared->gid_of_tenant("t-1"));
  EXPECT_EQ(copy_into_volume(data_dir, "v-1", "t-1", shared, archive("a.tgz"), "../x").error().code,
            "invalid_path");

  // A link the tenant left in the volume, and an archive that names a file past it without its
  // directory (tar then follows the link): the copy is confined to the volume, whatever the user
  // could write elsewhere.
  // Somewhere the volume's user may write (the test's own directory is root's alone).
  testing::TempDir outside_dir;
  const auto& outside = outside_dir.path();
  std::filesystem::permissions(outside, std::filesystem::perms::all);
  std::filesystem::create_directory_symlink(outside, volume / "planted");
  std::filesystem::create_directories(project_ / "planted");
  std::ofstream(project_ / "planted" / "evil") << "x\n";
  const auto crafted = dir_.path() / "crafted.tgz";
  ASSERT_EQ(std::system(fmt::format("tar -czf {} -C {} --no-recursion planted/evil",
                                    crafted.string(), project_.string())
                            .c_str()),
            0);
  const auto refused = copy_into_volume(data_dir, "v-1", "t-1", shared, crafted, "");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "unpack_failed") << refused.error().message;
  EXPECT_TRUE(std::filesystem::is_empty(outside));
}

// A volume the tenant's VMs had last over virtio-fs is their guests' (its directory one of the
// tenant's guest ids): a copy writes as the guests' root and leaves it theirs, so that a VM using
// it keeps its access. Another tenant's guest ids are never used for it.
TEST_F(UnpackTest, AVolumeTheTenantsGuestsHaveIsCopiedIntoAsTheirRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to change users";
  const auto shared = workload_users();
  ASSERT_NE(shared, nullptr);
  const auto data_dir = dir_.path() / "data";
  const auto volume = volume_dir(data_dir, "v-1");
  std::filesystem::create_directories(volume);
  const auto others = shared->guest_ids_of_tenant("t-other");
  const auto guests = shared->guest_ids_of_tenant("t-1");
  ASSERT_TRUE(others && guests);
  ASSERT_EQ(*guests, *others + kGuestIdCount);
  ASSERT_EQ(::chown(volume.c_str(), *guests, *guests), 0);
  const auto copied = copy_into_volume(data_dir, "v-1", "t-1", shared, archive("a.tgz"), "/sets");
  ASSERT_TRUE(copied) << copied.error().message;
  struct stat st {};
  ASSERT_EQ(::stat(volume.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, *guests) << "still the guests'";
  EXPECT_EQ(st.st_gid, *guests);
  ASSERT_EQ(::stat((volume / "sets" / "src" / "train.py").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, *guests) << "the guests' root";
  EXPECT_EQ(st.st_gid, *guests);

  // A volume of another tenant's guest ids (no copy of this tenant's writes as them) goes to
  // the tenant's group, as any volume that is not its guests'.
  const auto other_volume = volume_dir(data_dir, "v-2");
  std::filesystem::create_directories(other_volume);
  ASSERT_EQ(::chown(other_volume.c_str(), *others, *others), 0);
  ASSERT_TRUE(copy_into_volume(data_dir, "v-2", "t-1", shared, archive("a.tgz"), "/sets"));
  ASSERT_EQ(::stat((other_volume / "sets" / "src" / "train.py").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, shared->uid_of_instance("v-2"));
  EXPECT_EQ(st.st_gid, shared->gid_of_tenant("t-1"));
}

}  // namespace
}  // namespace gpurent::agent
