# Shortcuts; the scripts do the work (and install missing Debian packages first).
.PHONY: dev test build bench clean
dev:
	scripts/dev.sh
test:
	scripts/test.sh
build:
	scripts/install-deps.sh build && scripts/build.sh
bench:
	scripts/bench.sh
clean:
	rm -rf build
