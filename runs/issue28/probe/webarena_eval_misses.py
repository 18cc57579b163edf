"""The build's 100 held-out WebArena transitions on which a model's answer differs from the reference env's.

python runs/issue28/probe/webarena_eval_misses.py MODEL_DIR
Prints, for each miss, the action, the given fields' keys, the world line, reference vs model reward/done and URL.
"""

import json
import sys

from dreamgym_env.bench.sampling import sample_transitions
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.training.evaluate import load_model

pack = get_domain("webarena")
model, _ = load_model(sys.argv[1], backend="local")
transitions = [s.reference for s in sample_transitions(pack, 100, seed=0)]
answers = model.predict_sync([t.request for t in transitions])
for t, a in zip(transitions, answers):
    truth, request = t.truth, t.request
    got, want = json.loads(a.next_state), json.loads(truth.next_state)
    if (got, a.reward, a.terminated) == (want, truth.reward, truth.terminated):
        continue
    print("==", request.task.id, request.task.instruction)
    print("   action", request.action, "given:", bool(request.given_fields), "history:", [h.action for h in request.history])
    print("   world", request.world)
    print(f"   reward ref {truth.reward} model {a.reward}; done ref {truth.terminated} model {a.terminated}")
    print("   url ref", want.get("url"), "model", got.get("url"), "state url", json.loads(request.state).get("url"))
    print("   reasoning:", a.reasoning[:200])
model.close()
