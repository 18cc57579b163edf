#!/bin/sh
# Rebuild WebShop's and ALFWorld's LoRA adapters on today's requests (resumable: rerun the same command).
set -e
.venv/bin/dreamgym experience build --domain webshop --kind adapter --rollouts 0 --steps 70 --max-minutes 20 \
    --work runs/issue31/webshop-adapter
.venv/bin/dreamgym experience build --domain alfworld --kind adapter --rollouts 0 --max-minutes 30 \
    --work runs/issue31/alfworld-adapter
