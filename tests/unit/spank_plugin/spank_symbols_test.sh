#!/usr/bin/env bash
# The SPANK plugin exports the slurm_spank_* callbacks and the plugin_* identity
# objects (with C linkage), and nothing else.
set -euo pipefail
plugin=$1
syms=$(nm -D --defined-only "$plugin" | awk '{print $3}' | sort)
for want in plugin_name plugin_type plugin_version spank_plugin_version slurm_spank_init slurm_spank_task_init slurm_spank_task_init_privileged slurm_spank_user_init; do
  grep -qx "$want" <<<"$syms" || { echo "missing export: $want"; exit 1; }
done
extra=$(grep -vE '^(plugin_(name|type|version)|spank_plugin_version|spank_options|slurm_spank_[a-z_]+)$' <<<"$syms" || true)
[ -z "$extra" ] || { echo "unexpected exports:"; echo "$extra"; exit 1; }
echo "spank_symbols: $(wc -l <<<"$syms") exports, all expected"
