#!/usr/bin/env bash
# Build time of a crate holding one generated straight-line function of
# 2,000 statements (linear_core::workload::straight_line, written in shell)
# with #[differentiable], against the same crate without the attribute:
# `cargo build` in the dev profile (so the proc macro is unoptimised, as
# users get it), after the dependencies are built, not incremental (so
# each build checks the whole function again); and with the macro
# optimised by `[profile.dev.build-override] opt-level = 3`, as the
# README advises; and `cargo build --release`, with and without the
# attribute (the macro unoptimised again, as cargo builds proc macros in
# release by default, but the crate optimised: rustc's MIR optimiser
# then works on the generated bodies, where it once took time quadratic
# in a long function's tape). Writes
# target/criterion/build_time.txt (milliseconds) for the report.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$root/target/build-time"
rm -rf "$work"
mkdir -p "$work"
big="$work/big.rs"
{
  echo 'pub fn big(x: f64, y: f64) -> f64 {'
  echo ' let v0 = x * y;'
  echo ' let v1 = v0 + x;'
  echo ' let v2 = v1 * y;'
  for ((i = 3; i < 2000; i++)); do
    a=$((i - 1)); b=$((i - 2)); c=$((i - 3))
    case $((i % 4)) in
      0) echo " let v$i = v$a * v$b + x;" ;;
      1) echo " let v$i = v$a.sin() * y - v$c;" ;;
      2) echo " let v$i = (v$a - v$b).tanh() + v$c * 0.5;" ;;
      *) echo " let v$i = v$a.exp().sqrt() / (v$b * v$b + 1.0);" ;;
    esac
  done
  echo ' v1999'
  echo '}'
} > "$big"
for variant in with without with-opt release release-without; do
  dir="$work/big-$variant"
  mkdir -p "$dir/src"
  cat > "$dir/Cargo.toml" <<TOML
[package]
name = "build-time-big-$variant"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
linear-ad = { path = "$root" }

[workspace]
TOML
  if [ "$variant" = with-opt ]; then
    # The README's advice for the dev profile: the macro optimised.
    printf '\n[profile.dev.build-override]\nopt-level = 3\n' >> "$dir/Cargo.toml"
  fi
  profile=()
  case $variant in release*) profile=(--release) ;; esac
  if [ "$variant" != without ] && [ "$variant" != release-without ]; then
    { echo '#[::linear_ad::differentiable]'; cat "$big"; } > "$dir/src/lib.rs"
  else
    cp "$big" "$dir/src/lib.rs"
  fi
  (cd "$dir" && CARGO_INCREMENTAL=0 CARGO_TARGET_DIR="$work/target-$variant" cargo build --quiet "${profile[@]}")
  for run in 1 2 3; do
    touch "$dir/src/lib.rs"
    start=$(date +%s%N)
    (cd "$dir" && CARGO_INCREMENTAL=0 CARGO_TARGET_DIR="$work/target-$variant" cargo build --quiet "${profile[@]}")
    end=$(date +%s%N)
    echo "big-$variant $(( (end - start) / 1000000 ))" >> "$work/times.txt"
  done
done
mkdir -p "$root/target/criterion"
cp "$work/times.txt" "$root/target/criterion/build_time.txt"
cat "$root/target/criterion/build_time.txt"
