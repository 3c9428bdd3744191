# Sourced by scripts/demo.sh: `step CMD ARGS...` prints the command, quoted so that it can be
# pasted into a shell as it is, then runs it.

# One argument as a shell word: as it is when that is safe, else in single quotes (as Python's
# shlex.quote), so `--where "sell_id <= 5"` is shown as `--where 'sell_id <= 5'`.
shell_word() {
  if [[ -n $1 && $1 =~ ^[A-Za-z0-9_@%+=:,./-]+$ ]]; then
    printf '%s' "$1"
  else
    printf "'%s'" "${1//\'/\'\"\'\"\'}"
  fi
}

step() {
  local shown="" word
  for word in "$@"; do
    shown+="${shown:+ }$(shell_word "$word")"
  done
  printf '\n\033[1m$ %s\033[0m\n' "$shown"
  "$@"
}
