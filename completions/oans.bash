# bash completion for the oans tools and for `oans COMMAND` (the same options)
_oans_tool() {
  local cur prev opts tool
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD-1]}
  tool=${COMP_WORDS[0]##*/}
  if [[ $tool == oans ]]; then
    if ((COMP_CWORD == 1)); then
      COMPREPLY=($(compgen -W "run status scan plan apply cat diff --help --version" -- "$cur"))
      return
    fi
    tool=oans-${COMP_WORDS[1]}
  fi
  case $tool in
    oans-run) opts="--state-dir --show-config --keep --plan-only --exclude --exclude-preset --min-size --max-rate --until --deadline --io-class --link --same-owner --snapshots --scan-option --plan-option --apply-option --progress --quiet --wait-lock --metrics-file --json --help --version" ;;
    oans-status) opts="--state-dir --last --json --help --version" ;;
    oans-scan) opts="--output --previous --previous-damaged --refresh-extents --read-data --whole-files-only --pair-by-size --block-size --min-size --exclude --exclude-preset --io-threads --storage --order --memory --temp-dir --progress --quiet --json --summary-file --help --version" ;;
    oans-plan) opts="--output --round-size --memory --temp-dir --since --from-list --since-join --whole-files-only --same-owner --snapshots --min-run --max-rewrite --format --top --stats --json --summary-file --progress --quiet --help --version" ;;
    oans-apply) opts="--dry-run --prefetch --storage --deadline --until --max-rate --io-class --journal --no-journal --link --link-relax --progress --quiet --json --summary-file --help --version"
      # oans apply without PLAN: the newest plan of oans run, in the state directory given.
      [[ ${COMP_WORDS[0]##*/} == oans ]] && opts+=" --state-dir" ;;
    oans-cat) opts="--blocks --extents --help --version" ;;
    oans-diff) opts="--json --help --version" ;;
    *) return ;;
  esac
  case $prev in
    --storage) COMPREPLY=($(compgen -W "auto ssd hdd" -- "$cur")); return ;;
    --previous-damaged) COMPREPLY=($(compgen -W "refuse rescan" -- "$cur")); return ;;
    --order) COMPREPLY=($(compgen -W "auto physical inode none" -- "$cur")); return ;;
    --pair-by-size) COMPREPLY=($(compgen -W "auto always never" -- "$cur")); return ;;
    --progress) COMPREPLY=($(compgen -W "auto tty json none" -- "$cur")); return ;;
    --exclude-preset) COMPREPLY=($(compgen -W "nas" -- "$cur")); return ;;
    --metrics-file) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --format) COMPREPLY=($(compgen -W "plan text json fdupes dirs dirs-json" -- "$cur")); return ;;
    --prefetch) COMPREPLY=($(compgen -W "on off" -- "$cur")); return ;;
    --io-class) COMPREPLY=($(compgen -W "best-effort idle" -- "$cur")); return ;;
    --link) COMPREPLY=($(compgen -W "reflink hard" -- "$cur")); return ;;
    --snapshots) COMPREPLY=($(compgen -W "auto all none" -- "$cur")); return ;;
    --temp-dir|--state-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --memory|--block-size|--min-size|--round-size|--max-rate|--deadline|--until|--io-threads|--exclude|--top|--keep|--last|--wait-lock) return ;;
    --scan-option|--plan-option|--apply-option|--link-relax) return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  elif [[ $tool == oans-run ]]; then
    COMPREPLY=($(compgen -d -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -o filenames -F _oans_tool oans oans-scan oans-plan oans-apply oans-cat oans-diff
