# bash completion for the oans tools
_oans_tool() {
  local cur prev opts
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD-1]}
  case ${COMP_WORDS[0]##*/} in
    oans-scan) opts="--output --previous --previous-damaged --refresh-extents --block-size --min-size --exclude --io-threads --storage --order --temp-dir --progress --quiet --json --help --version" ;;
    oans-plan) opts="--output --round-size --memory --temp-dir --since --from-list --whole-files-only --format --stats --json --progress --quiet --help --version" ;;
    oans-apply) opts="--dry-run --prefetch --order --deadline --until --max-rate --io-class --journal --no-journal --link --progress --quiet --json --help --version" ;;
    oans-cat) opts="--blocks --help --version" ;;
    oans-diff) opts="--json --help --version" ;;
  esac
  case $prev in
    --storage) COMPREPLY=($(compgen -W "auto ssd hdd" -- "$cur")); return ;;
    --previous-damaged) COMPREPLY=($(compgen -W "refuse rescan" -- "$cur")); return ;;
    --order)
      if [[ ${COMP_WORDS[0]##*/} == oans-apply ]]; then
        COMPREPLY=($(compgen -W "physical none" -- "$cur"))
      else
        COMPREPLY=($(compgen -W "auto physical inode none" -- "$cur"))
      fi
      return ;;
    --progress) COMPREPLY=($(compgen -W "auto tty json none" -- "$cur")); return ;;
    --format) COMPREPLY=($(compgen -W "plan text json fdupes" -- "$cur")); return ;;
    --prefetch) COMPREPLY=($(compgen -W "on off" -- "$cur")); return ;;
    --io-class) COMPREPLY=($(compgen -W "best-effort idle" -- "$cur")); return ;;
    --link) COMPREPLY=($(compgen -W "reflink hard" -- "$cur")); return ;;
    --temp-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --memory|--block-size|--min-size|--round-size|--max-rate|--deadline|--until|--io-threads|--exclude) return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -o filenames -F _oans_tool oans-scan oans-plan oans-apply oans-cat oans-diff
