// TEMPORARY placeholder until the server lands (same session); replaced by the real one.
#include "server/server.h"
namespace gpurent::server {
int run_server(const ServerOptions&, const std::function<void(const ReadyInfo&)>&) { return 1; }
int run_dev(const DevOptions&, const std::function<void(const ReadyInfo&)>&) { return 1; }
}  // namespace gpurent::server
