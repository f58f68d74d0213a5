// libsodium's one-time set-up, for every module that calls it (random.cc, secret_box.cc).
#pragma once

namespace gpurent {

// Calls sodium_init (idempotent and thread-safe; it picks the fastest implementations). Aborts when
// it fails, which means there is no entropy source at all: nothing secret can be made then.
void ensure_sodium();

}  // namespace gpurent
