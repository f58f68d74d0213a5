#include "agent/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <vector>

#include "agent/runtime/volumes.h"
#include "agent/test_util.h"

namespace gpurent::agent {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

constexpr uid_t kTenantUid = 1234567;
constexpr gid_t kTenantGid = 1234568;

void write(const fs::path& path, const std::string& text = "x") {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

struct stat lstat_of(const fs::path& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st;
}

// A tree of a tenant's beside a file and a directory of the node's (root's, as a credential is)
// that links in the tree point to.
class TenantTree : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to give files to other users";
    write(tree() / "a" / "file");
    write(tree() / "b" / "c" / "file");
    write(node() / "credential");
    write(node() / "a" / "file");
    write(node() / "c" / "file");
    fs::create_symlink(node() / "credential", tree() / "link-to-file");
    fs::create_directory_symlink(node(), tree() / "link-to-directory");
  }
  fs::path tree() const { return dir_.path() / "tree"; }
  fs::path node() const { return dir_.path() / "node"; }
  fs::path elsewhere() const { return dir_.path() / "elsewhere"; }

  // Whether the node's files are root's still, as they were made.
  void expect_node_untouched() const {
    for (const auto& entry : fs::recursive_directory_iterator(node())) {
      EXPECT_EQ(lstat_of(entry.path()).st_uid, 0u) << entry.path();
      EXPECT_EQ(lstat_of(entry.path()).st_gid, 0u) << entry.path();
    }
  }

 private:
  TempDir dir_;
};

TEST_F(TenantTree, ChownTreeGivesEveryEntryAndLinksThemselvesNotWhatTheyPointTo) {
  ASSERT_TRUE(chown_tree(tree(), kTenantUid, kTenantGid));
  for (const fs::path& entry :
       {tree(), tree() / "a", tree() / "a" / "file", tree() / "b" / "c",
        tree() / "b" / "c" / "file", tree() / "link-to-file", tree() / "link-to-directory"}) {
    EXPECT_EQ(lstat_of(entry).st_uid, kTenantUid) << entry;
    EXPECT_EQ(lstat_of(entry).st_gid, kTenantGid) << entry;
  }
  expect_node_untouched();
}

TEST_F(TenantTree, ADirectorySwappedForALinkDuringTheWalkIsNotFollowedOutOfTheTree) {
  // The tenant's move, made at the first entry visited (inside a/ or inside b/, as readdir
  // orders them): the other top-level directory becomes a link to the node's directory, whose
  // a/file and c/file answer the names the walk would look for.
  bool swapped = false;
  std::vector<fs::path> visited;
  ASSERT_TRUE(walk_tree(tree(), [&](const TreeEntry& entry) -> Status {
    if (!swapped) {
      swapped = true;
      const fs::path other = tree() / (lies_below(entry.path, tree() / "a") ? "b" : "a");
      fs::rename(other, elsewhere());
      fs::create_directory_symlink(node(), other);
    }
    visited.push_back(entry.path);
    return chown_entry(entry, kTenantUid, kTenantGid);
  }));
  EXPECT_TRUE(swapped);
  expect_node_untouched();
  // The link that took the directory's place was visited as a link, and the walk still ended
  // with the root.
  ASSERT_FALSE(visited.empty());
  EXPECT_EQ(visited.back(), tree());
  EXPECT_EQ(lstat_of(tree()).st_uid, kTenantUid);
}

TEST_F(TenantTree, ShareVolumeWithGroupGivesTheGroupItsFilesAndNothingALinkPointsTo) {
  ::chmod((tree() / "a" / "file").c_str(), 04600);  // a set-uid file from before the sandbox
  const mode_t credential_mode = lstat_of(node() / "credential").st_mode;
  ASSERT_TRUE(share_volume_with_group(tree(), kTenantGid));
  const auto file = lstat_of(tree() / "a" / "file");
  EXPECT_EQ(file.st_uid, 0u);
  EXPECT_EQ(file.st_gid, kTenantGid);
  EXPECT_EQ(file.st_mode & 07777, 0660u);  // the group may write it; the set-uid bit is gone
  EXPECT_EQ(lstat_of(tree() / "b" / "c").st_mode & S_IRWXG, static_cast<mode_t>(S_IRWXG));
  EXPECT_EQ(lstat_of(tree()).st_mode & 07777, 02770u);
  expect_node_untouched();
  EXPECT_EQ(lstat_of(node() / "credential").st_mode, credential_mode);
}

TEST(WalkTreeTest, RefusesATreeDeeperThanItsDescriptorsReach) {
  TempDir dir;
  fs::path deep = dir.path();
  for (int i = 0; i <= kMaxTreeDepth; ++i) deep /= "d";
  fs::create_directories(deep);
  int visits = 0;
  const auto walked = walk_tree(dir.path(), [&](const TreeEntry&) -> Status {
    ++visits;
    return {};
  });
  ASSERT_FALSE(walked);
  EXPECT_NE(walked.error().message.find("directories deep"), std::string::npos)
      << walked.error().message;
  EXPECT_EQ(visits, 0);
}

TEST(WalkTreeTest, RefusesARootThatIsALinkAndStopsAtTheFirstErrorOfItsVisitor) {
  TempDir dir;
  write(dir.path() / "real" / "file");
  fs::create_directory_symlink(dir.path() / "real", dir.path() / "link");
  EXPECT_FALSE(walk_tree(dir.path() / "link", [](const TreeEntry&) -> Status { return {}; }));
  const auto walked = walk_tree(dir.path() / "real", [](const TreeEntry& entry) -> Status {
    return fail(Error::internal("refused " + entry.path.filename().string()));
  });
  ASSERT_FALSE(walked);
  EXPECT_EQ(walked.error().message, "refused file");
}

TEST(WalkTreeTest, WhatTheTenantRemovesDuringTheWalkIsSkipped) {
  TempDir dir;
  write(dir.path() / "a" / "x" / "file");
  write(dir.path() / "a" / "y" / "file");
  bool removed = false;
  std::vector<fs::path> visited;
  ASSERT_TRUE(walk_tree(dir.path(), [&](const TreeEntry& entry) -> Status {
    if (!removed) {  // at the first file, in a/x or a/y: a/ goes, the other one with it
      removed = true;
      fs::remove_all(dir.path() / "a");
    }
    visited.push_back(entry.path);
    return {};
  }));
  EXPECT_TRUE(removed);
  // The first file, its directory, a/ (held by its descriptor) and the root; not the other one.
  EXPECT_EQ(visited.size(), 4u);
  EXPECT_EQ(visited.back(), dir.path());
}

// Where the kernel does not protect hard links, a file with other names may be a node's file that
// a tenant linked into its tree: root changes it only where they are protected.
TEST(WalkTreeTest, AFileWithOtherNamesIsChangedOnlyWhereHardLinksAreProtected) {
  TempDir dir;
  write(dir.path() / "file");
  write(dir.path() / "alone");
  fs::create_hard_link(dir.path() / "file", dir.path() / "other-name");
  std::map<std::string, bool> unprotected_ok;
  std::map<std::string, bool> protected_ok;
  ASSERT_TRUE(walk_tree(dir.path(), [&](const TreeEntry& entry) -> Status {
    const std::string name = entry.path.filename();
    const auto refused = check_hard_links(entry, /*links_protected=*/false);
    if (!refused) {
      EXPECT_NE(refused.error().message.find("fs.protected_hardlinks"), std::string::npos);
    }
    unprotected_ok[name] = refused.has_value();
    protected_ok[name] = check_hard_links(entry, /*links_protected=*/true).has_value();
    return {};
  }));
  EXPECT_FALSE(unprotected_ok["file"]);
  EXPECT_FALSE(unprotected_ok["other-name"]);
  EXPECT_TRUE(unprotected_ok["alone"]);
  EXPECT_TRUE(unprotected_ok[dir.path().filename()]) << "a directory has no other names";
  for (const auto& [name, ok] : protected_ok) EXPECT_TRUE(ok) << name;
}

TEST(UntrustedFileTest, OpensOnlyARegularFileByItsOwnName) {
  TempDir dir;
  write(dir.path() / "console.log", "booted");
  EXPECT_EQ(*read_untrusted_file(dir.path() / "console.log", 1024), "booted");
  EXPECT_FALSE(read_untrusted_file(dir.path() / "console.log", 3));  // longer than allowed
  EXPECT_EQ(read_untrusted_file(dir.path() / "none", 1024).error().kind, ErrorKind::kNotFound);
  fs::create_symlink(dir.path() / "console.log", dir.path() / "link");
  EXPECT_FALSE(read_untrusted_file(dir.path() / "link", 1024));
  ASSERT_EQ(::mkfifo((dir.path() / "fifo").c_str(), 0600), 0);
  EXPECT_FALSE(read_untrusted_file(dir.path() / "fifo", 1024));  // refused, not waited on
}

TEST(LiesBelowTest, JudgesByNamesAndRefusesDotDot) {
  EXPECT_TRUE(lies_below("/data/vms/r1/qemu", "/data"));
  EXPECT_FALSE(lies_below("/data", "/data"));
  EXPECT_FALSE(lies_below("/data/../etc", "/data"));
  EXPECT_FALSE(lies_below("/database", "/data"));
}

}  // namespace
}  // namespace gpurent::agent
