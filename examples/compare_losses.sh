#!/usr/bin/env bash
# compare_losses.sh REFERENCE RUN STEPS: exits 0 when the two --loss-log files cover the same
# STEPS steps and every loss of RUN is within 1e-4 relative of REFERENCE's (float32 sums taken in
# another order differ by less); otherwise prints both side by side and exits 1.
set -euo pipefail
if ! awk -v steps="$3" 'NR == FNR { ref[$1] = $2; next }
        { n++; d = $2 - ref[$1]; if (d < 0) d = -d; if (!($1 in ref) || d > 1e-4 * ref[$1]) bad++ }
        END { exit (n == steps && bad == 0) ? 0 : 1 }' "$1" "$2"; then
  echo "FAIL: the losses of $2 differ from those of $1:"
  paste "$1" "$2"
  exit 1
fi
