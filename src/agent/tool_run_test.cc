// A helper program gets its output collected and nothing of the agent's but its environment:
// a descriptor the agent holds open (without close-on-exec) is not the tool's.
#include "agent/tool_run.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace gpurent::agent {
namespace {

TEST(ToolRun, TheToolSeesItsOutputAndNoneOfTheAgentsDescriptors) {
  const int held = ::open("/dev/null", O_RDONLY);  // deliberately without O_CLOEXEC
  ASSERT_GE(held, 3);
  const auto ran = run_tool(
      {.argv = {"sh", "-c", "echo \"$GREETING\"; ls /proc/$$/fd"}, .env = {{"GREETING", "hi"}}});
  ::close(held);
  ASSERT_TRUE(ran);
  EXPECT_FALSE(ran->timed_out);
  EXPECT_EQ(ran->output.substr(0, 3), "hi\n");
  // The shell's own descriptors: its input, output and error.
  EXPECT_EQ(ran->output.substr(3), "0\n1\n2\n") << ran->output;
  EXPECT_FALSE(run_tool({.argv = {"/nonexistent/tool"}}));
}

}  // namespace
}  // namespace gpurent::agent
