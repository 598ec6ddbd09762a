#!/usr/bin/env bash
# Regenerates docs/screenshots/*.png with real content under Xvfb (packaging/install-deps.sh
# installs xvfb): a finished chat with the default model, the Models page mid-download from the
# library tests' local hub, the Cluster page coordinating two nodes on loopback (the chat's model
# running tensor-parallel, with live health), and Settings.
#   docs/screenshots/take.sh [BUILD_DIR [SHOT...]]   (default: build, every shot; needs tandem and
#                                                    tandem-node; SHOT: chat models cluster settings)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out="$root/docs/screenshots"
model="${TANDEM_DEFAULT_MODEL:-$("$root/packaging/fetch-default-model.sh")}"
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
export TANDEM_INSTANCE_KEY="screenshots-$$" QT_QPA_PLATFORM=xcb
# The shots' settings (last model, Coordinate, window state) stay out of the user's QSettings.
export XDG_CONFIG_HOME="$work/config"
shots=("${@:2}")
want() { [ ${#shots[@]} -eq 0 ] || [[ " ${shots[*]} " == *" $1 "* ]]; }
shot() { xvfb-run -a -s "-screen 0 1400x900x24" "$build/bin/tandem" --new-instance "$@"; }

if want chat; then
# 1. Chats: a finished answer with a code block.
# The default model is a small *base* model: it continues text rather than answering, so the
# prompt is a document with a code block that it continues (its reply repeats the pattern).
prompt=$'Here is a Python function:\n\n```python\ndef reverse(s: str) -> str:\n    return s[::-1]\n```\n\nQ: What does reverse("abc") return?\nA:'
shot --home "$work/chat" --chats-db "$work/chat/chats.db" --model "$model" \
  --prompt "$prompt" --screenshot "$out/chat.png"
fi

if want models; then
# 2. Models: the library, a hub search, a repo's files and a throttled download under way.
hub="$work/hub"
mkdir -p "$hub/google/gemma-3-270m-GGUF" "$work/models/local"
ln -s "$model" "$hub/google/gemma-3-270m-GGUF/gemma-3-270m-Q4_K_M.gguf"
ln -s "$model" "$work/models/local/gemma-3-270m-q4_k_m.gguf"
cat > "$hub/_models.json" <<'JSON'
[{"id": "google/gemma-3-270m-GGUF", "downloads": 48210, "likes": 312, "tags": ["gguf"]},
 {"id": "google/gemma-3-1b-it-GGUF", "downloads": 120533, "likes": 801, "tags": ["gguf"]},
 {"id": "google/gemma-3-4b-it-GGUF", "downloads": 88012, "likes": 650, "tags": ["gguf"]}]
JSON
python3 "$root/tests/library/hf_test_server.py" --root "$hub" --port 0 > "$work/hub.port" &
pids+=($!)
for _ in $(seq 50); do grep -q PORT "$work/hub.port" && break; sleep 0.2; done
port=$(awk '/PORT/ {print $2}' "$work/hub.port")
curl -fsS "http://127.0.0.1:$port/_control/fault?kind=throttle&rate=8000000&times=-1&match=gemma" >/dev/null
HF_ENDPOINT="http://127.0.0.1:$port" shot --home "$work/models" --chats-db "$work/models/chats.db" \
  --import "$work/models/local" --search gemma --repo google/gemma-3-270m-GGUF \
  --download google/gemma-3-270m-GGUF:Q4_K_M --page models --shot-delay 1500 \
  --screenshot "$out/models.png"
fi

if want cluster; then
# 3. Cluster: two nodes with their own identities on loopback discovery, paired with each other
# and with this app, which coordinates: the chat's model runs tensor-parallel over the three
# processes and the page shows the shares in use and the live step time / all-reduce latency.
dport=$((47700 + $$ % 200))
mkdir -p "$work/tpmodels"
ln -s "$model" "$work/tpmodels/$(basename "$model")"  # the nodes read their shards from it
for n in a b; do
  "$build/bin/tandem-node" serve --home "$work/node-$n" --name "workstation-$n" --loopback \
    --discovery-port $dport --port 0 --state-file "$work/node-$n.json" --threads 1 \
    --models "$work/tpmodels" --shard-cache "$work/shards-$n" &
  pids+=($!)
done
state() { python3 -c "import json; s=json.load(open('$work/node-$1.json')); print(s['port'], s['pairing_code'] or '')"; }
code_of() {  # waits for node $1's pairing code other than $2
  for _ in $(seq 100); do
    if [ -s "$work/node-$1.json" ]; then
      read -r p c < <(state "$1")
      if [ -n "$c" ] && [ "$c" != "${2:-}" ]; then echo "$p $c"; return; fi
    fi
    sleep 0.2
  done
  echo "node-$1 shows no pairing code" >&2; exit 1
}
read -r bport bcode < <(code_of b)
"$build/bin/tandem-node" pair --home "$work/node-a" --name workstation-a "127.0.0.1:$bport" "$bcode"
read -r aport acode < <(code_of a)
"$build/bin/tandem-node" pair --home "$work/cluster" --name this-desktop "127.0.0.1:$aport" "$acode"
read -r bport bcode < <(code_of b "$bcode")
"$build/bin/tandem-node" pair --home "$work/cluster" --name this-desktop "127.0.0.1:$bport" "$bcode"
shot --home "$work/cluster" --chats-db "$work/cluster/chats.db" --model "$model" --node-service \
  --node-name this-desktop --loopback --discovery-port $dport --threads 1 --coordinate \
  --prompt "The three primary colors are" --page cluster --screenshot "$out/cluster.png"
fi

if want settings; then
# 4. Settings.
shot --home "$work/settings" --chats-db "$work/settings/chats.db" --page settings \
  --screenshot "$out/settings.png"
fi

ls -l "$out"/*.png
