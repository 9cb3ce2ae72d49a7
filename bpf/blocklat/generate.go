package blocklat

// blocklat.c's object and bindings are committed; `make generate` rebuilds them (it
// needs clang-14, llvm-14 and libbpf-dev: scripts/install-deps.sh generate).
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang-14 -strip llvm-strip-14 -cflags "-O2 -g -Wall -Werror" -tags linux -target bpfel,bpfeb blocklat blocklat.c -- -I../headers
