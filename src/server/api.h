// The REST API (docs/api.md, docs/openapi.json): authentication, input validation, and the
// translation between HTTP and controller commands. Runs on the server's I/O thread.
//
// Every input is validated here before it reaches the controller: unknown fields, wrong types,
// out-of-range numbers and oversized strings are 400s naming the field. Mutations go through the
// ControllerHost, so a 2xx answer means the change is durable.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/host.h"
#include "server/http.h"
#include "server/log_store.h"

namespace gpurent::server {

class Api {
 public:
  Api(ControllerHost& host, LogStore& logs);
  ~Api();
  asio::awaitable<Response> handle(Request request);
  // (method, path pattern) of every route.
  std::vector<std::pair<std::string, std::string>> routes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpurent::server
