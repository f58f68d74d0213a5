# The libFuzzer harnesses (fuzz/README.md), included by CMakeLists.txt when GPURENT_FUZZ is on.
# scripts/fuzz.sh configures them in build-fuzz/ with clang 19 (Debian 12's clang 14 cannot parse
# libstdc++ 12's <expected>) and builds only these targets and what they link.
#
# The libraries the harnesses link (common, model, api, sched) are built with coverage
# instrumentation (-fsanitize=fuzzer-no-link) and AddressSanitizer + UndefinedBehaviorSanitizer;
# the harnesses add libFuzzer's main. Code of the server, the simulator and billing that the
# harnesses need is compiled into them from its own sources (request_bodies.cc, csv.cc,
# inputs.cc, invoice.cc) rather than linked from gpurent_server, gpurent_sim and gpurent_billing,
# which would bring the controller, the store and the agent along: minutes of build on two cores
# for code no harness reaches. The HTTP harness includes src/net/http.cc itself, whose conversion
# of Beast's messages into net::Request lives in an anonymous namespace.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang" OR CMAKE_CXX_COMPILER_VERSION VERSION_LESS 16)
  message(FATAL_ERROR "GPURENT_FUZZ needs clang 16 or later (libFuzzer, and <expected> from "
                      "libstdc++ 12): configure with CXX=clang++-19 (scripts/fuzz.sh does)")
endif()
if(GPURENT_SANITIZE)
  message(FATAL_ERROR "GPURENT_FUZZ brings its own sanitizers: leave GPURENT_SANITIZE off")
endif()

# Every UndefinedBehaviorSanitizer report is a crash the fuzzer stops at, not a line in a log.
# -O1, as fuzzing builds usually are: the HTTP harness (all of http.cc's coroutines under the
# sanitizers) is the build's longest compile, and took 40 % longer at -O2.
# Warnings are not errors here: g++ 12's build is the warning gate, and clang 19 warns of other
# things. Not of libstdc++ 12's own use of std::get_temporary_buffer (in stable_sort), which it
# flags as deprecated in C++23.
set(GPURENT_FUZZ_FLAGS -O1 -fsanitize=address,undefined -fno-sanitize-recover=all
                       -fno-omit-frame-pointer -gline-tables-only -Wno-error
                       -Wno-deprecated-declarations)
foreach(lib common model api sched)
  target_compile_options(gpurent_${lib} PRIVATE -fsanitize=fuzzer-no-link ${GPURENT_FUZZ_FLAGS})
endforeach()

set(GPURENT_FUZZ_TARGETS)
function(gpurent_fuzz_target name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;LIBRARIES")
  add_executable(fuzz_${name} ${CMAKE_SOURCE_DIR}/fuzz/fuzz_${name}.cc ${arg_SOURCES})
  target_compile_options(fuzz_${name} PRIVATE -fsanitize=fuzzer ${GPURENT_FUZZ_FLAGS})
  target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_include_directories(fuzz_${name} PRIVATE ${CMAKE_SOURCE_DIR}/fuzz)
  target_link_libraries(fuzz_${name} PRIVATE ${arg_LIBRARIES})
  set(GPURENT_FUZZ_TARGETS ${GPURENT_FUZZ_TARGETS} fuzz_${name} PARENT_SCOPE)
endfunction()

# 1. HTTP requests: Beast's parser on raw bytes, then the server's conversion into net::Request
# (http.cc serves TLS streams too, through OpenSSL).
gpurent_fuzz_target(http_request LIBRARIES gpurent_common Boost::system OpenSSL::SSL
                    OpenSSL::Crypto)
# Boost 1.74's Asio enables its coroutines for clang only with <experimental/coroutine>, which
# clang 19 no longer has (scripts/check-tidy.sh says the same): C++20's will do.
target_compile_definitions(fuzz_http_request PRIVATE BOOST_ASIO_HAS_CO_AWAIT=1)
# 2. The routers: the server's route table (every path of docs/openapi.json) and service paths.
gpurent_fuzz_target(router SOURCES ${OPENAPI_CC} LIBRARIES gpurent_model)
# 3. The API's request bodies, as the server reads them and the SDK writes them.
gpurent_fuzz_target(request_bodies SOURCES ${CMAKE_SOURCE_DIR}/src/server/request_bodies.cc
                    LIBRARIES gpurent_api)
# 4. The model's JSON forms (the store's rows): read, written back, read again.
gpurent_fuzz_target(model_codec LIBRARIES gpurent_model)
# 5. The agent protocol: reports, desired states, registrations, exec, file copies.
gpurent_fuzz_target(agent_protocol LIBRARIES gpurent_model)
# 6. The telemetry frame inside a report (binary, base64).
gpurent_fuzz_target(telemetry_frame LIBRARIES gpurent_model)
# 7. CSV: the simulator's inputs (gpurent's and the Alibaba trace's) and the invoice CSV.
gpurent_fuzz_target(csv_inputs
                    SOURCES ${CMAKE_SOURCE_DIR}/src/sim/csv.cc ${CMAKE_SOURCE_DIR}/src/sim/inputs.cc
                            ${CMAKE_SOURCE_DIR}/src/billing/invoice.cc
                    LIBRARIES gpurent_sched)

# `ninja -C build-fuzz fuzz` builds every harness and nothing else.
add_custom_target(fuzz DEPENDS ${GPURENT_FUZZ_TARGETS})
