#!/usr/bin/env bash
# Build time of a crate holding the benchmark workloads with
# #[differentiable], against the same crate with the attributes removed
# (both after their dependencies are built). Writes
# target/criterion/build_time.txt (milliseconds) for the report.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$root/target/build-time"
rm -rf "$work"
mkdir -p "$work"
for variant in with without; do
  mkdir -p "$work/$variant/src"
  cat > "$work/$variant/Cargo.toml" <<TOML
[package]
name = "build-time-$variant"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
linear-ad = { path = "$root" }

[workspace]
TOML
  # The workloads, with the generated 100-input Rosenbrock sum inlined.
  sed -e 's|include!(concat!(env!("OUT_DIR"), "/rosenbrock_n.rs"));||' "$root/bench/src/lib.rs" > "$work/$variant/src/lib.rs"
  cat "$root"/target/release/build/linear-ad-bench-*/out/rosenbrock_n.rs >> "$work/$variant/src/lib.rs" 2>/dev/null || true
  if [ "$variant" = without ]; then
    sed -i -e 's/^#\[differentiable\]$//' -e 's/^#\[::linear_ad::differentiable\]$//' -e 's/#\[nondiff\] //' -e 's/^use linear_ad::differentiable;$//' "$work/$variant/src/lib.rs"
  fi
  (cd "$work/$variant" && CARGO_TARGET_DIR="$work/target-$variant" cargo build --quiet 2>/dev/null || true)
  touch "$work/$variant/src/lib.rs"
  start=$(date +%s%N)
  (cd "$work/$variant" && CARGO_TARGET_DIR="$work/target-$variant" cargo build --quiet)
  end=$(date +%s%N)
  echo "$variant $(( (end - start) / 1000000 ))" >> "$work/times.txt"
done
mkdir -p "$root/target/criterion"
cp "$work/times.txt" "$root/target/criterion/build_time.txt"
cat "$root/target/criterion/build_time.txt"
