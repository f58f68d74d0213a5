# Shortcuts; the scripts do the work (and install missing Debian packages first).
.PHONY: dev test test-sanitize build bench clean
dev:
	scripts/dev.sh
test:
	scripts/test.sh
test-sanitize:
	scripts/install-deps.sh test && BUILD_DIR=build-asan scripts/build.sh -DGPURENT_SANITIZE=ON && \
	  ctest --test-dir build-asan --output-on-failure -j 2
build:
	scripts/install-deps.sh build && scripts/build.sh
bench:
	scripts/bench.sh
clean:
	rm -rf build
# The libFuzzer harnesses (fuzz/README.md), FUZZ_SECONDS (default 300) per target.
.PHONY: fuzz
fuzz:
	scripts/fuzz.sh $(or $(FUZZ_SECONDS),300)
