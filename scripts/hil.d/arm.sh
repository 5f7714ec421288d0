# shellcheck shell=bash
hil_arm() { say "arm: not yet"; return 1; }
