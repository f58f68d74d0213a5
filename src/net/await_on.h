// Blocking work off an I/O thread: a coroutine on an io_context awaits work run elsewhere (a
// thread pool), and resumes on its own executor with the work's result.
#pragma once

#include <utility>  // before Asio: Boost 1.74 with C++20 coroutines needs it

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <type_traits>

namespace gpurent::net {

// Runs `work` (callable once, returning a movable value) on `where` (a thread pool, a strand);
// co_await resumes on the awaiting coroutine's executor with what it returned.
template <class Where, class Work>
auto await_on(Where& where, Work work) {
  using R = std::invoke_result_t<Work&>;
  return boost::asio::async_initiate<decltype(boost::asio::use_awaitable), void(R)>(
      [&where](auto handler, Work work) {
        boost::asio::post(where, [handler = std::move(handler), work = std::move(work)]() mutable {
          const auto resume_on = boost::asio::get_associated_executor(handler);
          boost::asio::post(resume_on, [handler = std::move(handler), result = work()]() mutable {
            std::move(handler)(std::move(result));
          });
        });
      },
      boost::asio::use_awaitable, std::move(work));
}

}  // namespace gpurent::net
