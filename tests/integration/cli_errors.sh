#!/usr/bin/env bash
# Bad input gets a clear message naming the file or option and exit code 2: wrong sizes,
# truncated, corrupted, empty and wrong-kind files, a binary stream to a terminal.
source "$(dirname "$0")/lib.sh"
it_init "$1"
expect_error() {  # expect_error PATTERN CMD... : exit 2 and PATTERN on stderr
  local pat=$1; shift
  set +e
  "$@" > "$WORK/out" 2> "$WORK/err" < /dev/null
  local rc=$?
  set -e
  [ $rc -eq 2 ] || fail "$* exited $rc, expected 2 ($(cat "$WORK/err"))"
  grep -q -- "$pat" "$WORK/err" || fail "$*: message lacks '$pat': $(cat "$WORK/err")"
  pass "$* -> $(head -1 "$WORK/err")"
}
for t in scan plan apply cat diff; do
  # Not through a pipe into grep -q: grep leaves at the first match, and a help longer
  # than one write then dies of SIGPIPE, which pipefail reports as a failure.
  "$BIN/oans-$t" --help > "$WORK/help" || fail "oans-$t --help exited $?"
  grep -q "Exit codes" "$WORK/help" || fail "oans-$t --help lacks exit codes"
  "$BIN/oans-$t" --version | grep -q "^oans-$t (oans) " || fail "oans-$t --version"
done
pass "--help and --version on every tool"

mkdir -p "$WORK/tree"
printf 'hello world, a file of some bytes\n%.0s' $(seq 1 200) > "$WORK/tree/a"
cp "$WORK/tree/a" "$WORK/tree/b"
expect_error "--block-size" "$BIN/oans-scan" --block-size 100X "$WORK/tree" -o "$WORK/i"
expect_error "--min-size" "$BIN/oans-scan" --min-size "10 M" "$WORK/tree" -o "$WORK/i"
expect_error "--round-size" "$BIN/oans-plan" --round-size 12Q "$WORK/i"
expect_error "at least 1M" "$BIN/oans-plan" --round-size 0 "$WORK/i"
expect_error "--max-rewrite" "$BIN/oans-plan" --max-rewrite 60 "$WORK/i"
expect_error "--max-rewrite" "$BIN/oans-plan" --max-rewrite 10% "$WORK/i"
expect_error "multiple of 4 KiB" "$BIN/oans-scan" --block-size 1000 "$WORK/tree" -o "$WORK/i"
expect_error "nonexistent" "$BIN/oans-scan" "$WORK/nonexistent" -o "$WORK/i"
expect_error "--memory" "$BIN/oans-plan" --memory 100 "$WORK/i"
expect_error "at least 16M" "$BIN/oans-plan" --memory 1M "$WORK/i"
expect_error "--memory" "$BIN/oans-scan" --memory 100 "$WORK/tree" -o "$WORK/i"
expect_error "at least 16M" "$BIN/oans-scan" --memory 1M "$WORK/tree" -o "$WORK/i"
expect_error "$WORK/no-such-dir" "$BIN/oans-scan" --temp-dir "$WORK/no-such-dir" "$WORK/tree" -o "$WORK/i"

sync  # the files' extents allocated, so that a second scan maps them the same
settle
"$BIN/oans-scan" --quiet "$WORK/tree" -o "$WORK/good.idx"
"$BIN/oans-plan" --quiet "$WORK/good.idx" -o "$WORK/good.plan"
"$BIN/oans-plan" --quiet --memory 16M --temp-dir "$WORK" "$WORK/good.idx" -o "$WORK/small.plan"
cmp -s <("$BIN/oans-cat" "$WORK/good.plan" | grep -v created) <("$BIN/oans-cat" "$WORK/small.plan" | grep -v created) ||
  fail "--memory 16M planned differently"
pass "oans-plan --memory 16M --temp-dir plans the same"
"$BIN/oans-scan" --quiet --memory 16M --temp-dir "$WORK" --previous "$WORK/good.idx" "$WORK/tree" -o "$WORK/again.idx"
[ "$("$BIN/oans-cat" "$WORK/again.idx" | grep -c '"reused":true')" = 2 ] || fail "oans-scan --memory 16M reused nothing"
# Records compared whatever their order (storage detection may choose another read order).
cmp -s <("$BIN/oans-cat" "$WORK/good.idx" | grep -v index-header | sort) \
  <("$BIN/oans-cat" "$WORK/again.idx" | grep -v index-header | sed 's/"reused":true,//' | sort) ||
  fail "oans-scan --memory 16M --previous indexed differently"
pass "oans-scan --memory 16M --previous indexes the same"
# --top takes a positive number: 0 and negatives are refused, whatever the form.
expect_error "--top takes a positive number" "$BIN/oans-plan" --format dirs --top 0 "$WORK/good.idx"
expect_error "--top takes a positive number" "$BIN/oans-plan" --format dirs --top -3 "$WORK/good.idx"
expect_error "--top takes a positive number" "$BIN/oans-plan" --format dirs-json --top=-1 "$WORK/good.idx"
"$BIN/oans-plan" --quiet --format dirs --top 1 "$WORK/good.idx" > "$WORK/top1" || fail "--top 1 refused"
size=$(stat -c %s "$WORK/good.idx")
head -c $((size - 5)) "$WORK/good.idx" > "$WORK/trunc.idx"
expect_error "trunc.idx is truncated" "$BIN/oans-plan" "$WORK/trunc.idx" -o "$WORK/p"
psize=$(stat -c %s "$WORK/good.plan")
head -c $((psize - 5)) "$WORK/good.plan" > "$WORK/trunc.plan"
expect_error "trunc.plan is truncated" "$BIN/oans-apply" "$WORK/trunc.plan"
: > "$WORK/empty"
expect_error "empty is empty" "$BIN/oans-plan" "$WORK/empty" -o "$WORK/p"
expect_error "empty is empty" "$BIN/oans-apply" "$WORK/empty"
head -c 4096 /dev/urandom > "$WORK/garbage"
expect_error "garbage is not an oans index" "$BIN/oans-plan" "$WORK/garbage" -o "$WORK/p"
expect_error "garbage is not an oans plan" "$BIN/oans-apply" "$WORK/garbage"
expect_error "empty is not an oans index or plan" "$BIN/oans-cat" "$WORK/empty"
expect_error "garbage is not an oans index or plan" "$BIN/oans-cat" "$WORK/garbage"
cp "$WORK/good.idx" "$WORK/flipped.idx"
printf '\xff\xff\xff\xff' | dd of="$WORK/flipped.idx" bs=1 seek=$((size / 2)) conv=notrunc status=none
expect_error "flipped.idx" "$BIN/oans-plan" "$WORK/flipped.idx" -o "$WORK/p"
expect_error "is a dedupe plan, not an index" "$BIN/oans-plan" "$WORK/good.plan" -o "$WORK/p"
expect_error "is an extent index, not a plan" "$BIN/oans-apply" "$WORK/good.idx"
expect_error "is a dedupe plan" "$BIN/oans-scan" --previous "$WORK/good.plan" "$WORK/tree" -o "$WORK/i"
[ ! -e "$WORK/p" ] || fail "a failed plan left an output file"
[ -z "$(find "$WORK" -maxdepth 1 -name '*tmp-*')" ] || fail "a temporary file was left behind"
pass "failed runs leave no output file"

# Binary data is never written to a terminal.
if command -v script >/dev/null; then
  script -qec "$BIN/oans-scan $WORK/tree" /dev/null > "$WORK/tty.out" 2>&1 || true
  grep -q "refusing to write binary data to a terminal" "$WORK/tty.out" || fail "scan wrote to a terminal"
  pass "oans-scan refuses a terminal as output"
fi

# A closed pipe is an error with a message, not a silent success.
set +e
"$BIN/oans-scan" "$WORK/tree" 2> "$WORK/err" | head -c 0
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" -ne 0 ]; then
  grep -q "pipe" "$WORK/err" || fail "closed pipe not explained: $(cat "$WORK/err")"
  pass "closed pipe -> exit $rc with a message"
fi
