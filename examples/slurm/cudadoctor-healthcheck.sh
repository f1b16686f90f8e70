#!/bin/sh
# Slurm HealthCheckProgram: drain this node when `cudadoctor check` finds an error, resume it once healthy.
#
#   # slurm.conf (https://slurm.schedmd.com/slurm.conf.html#OPT_HealthCheckProgram)
#   HealthCheckProgram=/usr/local/sbin/cudadoctor-healthcheck
#   HealthCheckInterval=300
#
# The drain reason starts with "cudadoctor:" and names the first error, e.g.
#   cudadoctor: CD104 CUDA_VISIBLE_DEVICES='' hides all 8 GPU(s): CUDA will report no device (error 100)
# Only a node this script drained is resumed: a drain an administrator set with another reason is left alone.
# When cudadoctor itself cannot run (exit 2 or 3, or it times out) the node is left as it is, and the reason
# is logged: the doctor's own failure is not the node's.
#
# slurmd runs the program as SlurmdUser with an environment holding only SLURMD_NODENAME, so PATH and the
# cudadoctor to run are set here; each can be overridden from the environment (a wrapper, or systemd).
set -u
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
CUDADOCTOR=${CUDADOCTOR:-cudadoctor}
# Extra arguments for `cudadoctor check` (word-split), e.g. "--require driver>=570 --ignore CD7".
CUDADOCTOR_ARGS=${CUDADOCTOR_ARGS:-}
CUDADOCTOR_TIMEOUT=${CUDADOCTOR_TIMEOUT:-40}
node=${SLURMD_NODENAME:-$(hostname -s)}
tag="cudadoctor:"

log() { logger -t cudadoctor-healthcheck -- "$node: $*" 2>/dev/null || echo "cudadoctor-healthcheck: $node: $*" >&2; }

# slurmd kills a health check that runs past 60 s; stay well inside that.
# shellcheck disable=SC2086 # CUDADOCTOR_ARGS is a list of arguments on purpose
out=$(timeout "$CUDADOCTOR_TIMEOUT" "$CUDADOCTOR" check --format github $CUDADOCTOR_ARGS 2>/dev/null)
rc=$?

# The node's current drain reason, empty when none (sinfo prints one line per partition).
reason=$(timeout 10 sinfo --noheader --nodes="$node" --format=%E 2>/dev/null | head -n 1)
[ "$reason" = "none" ] && reason=""
ours=0
case "$reason" in "$tag"*) ours=1 ;; esac

case $rc in
0)
    if [ $ours = 1 ]; then
        timeout 10 scontrol update nodename="$node" state=resume && log "healthy again, resumed"
    fi
    ;;
1)
    # github format: one "::error title=cudadoctor CD104 name::message%0AFix: ..." line per error.
    errors=$(printf '%s\n' "$out" | grep -c '^::error ')
    first=$(printf '%s\n' "$out" | sed -n 's/^::error title=cudadoctor \(CD[0-9]*\)[^:]*::\(.*\)$/\1 \2/p' \
        | head -n 1 | sed -e 's/%0A.*//' -e 's/%0D//g' -e 's/%25/%/g')
    [ -n "$first" ] || first="check failed (exit 1)"
    [ "$errors" -gt 1 ] && first="$first (+$((errors - 1)) more)"
    new=$(printf '%s %s' "$tag" "$first" | cut -c 1-200)
    if [ -n "$reason" ] && [ $ours = 0 ]; then
        log "not draining, already drained: $reason (would be: $new)"
    elif [ "$reason" != "$new" ]; then
        timeout 10 scontrol update nodename="$node" state=drain reason="$new" && log "drained: $new"
    fi
    ;;
*)
    log "cudadoctor check could not judge this node (exit $rc); node state left as it is"
    ;;
esac
exit 0
