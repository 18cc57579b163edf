"""Every step of a pack's synthetic episodes beside their replay in the reference env (where outcomes differ)."""
import json
import sys

from dreamgym_env.agents import make_policy
from dreamgym_env.bench.fidelity import normalize_state
from dreamgym_env.envs.models import pack_models
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.experience.selection import model_from_spec

name, spec, policy_name, first, episodes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
domain = get_domain(name)
model = model_from_spec(spec, models=pack_models(domain), domain=name)
tasks = domain.tasks("test")
synthetic = DreamEnv(domain, model, split="test", max_steps=domain.max_episode_steps, history_len=4, state_mode="structured")
reference = domain.make_reference_env(split="test", max_steps=domain.max_episode_steps)
policy = make_policy(policy_name, domain, seed=0)
for episode in range(first, first + episodes):
    task = tasks[episode % len(tasks)]
    policy.reset() if hasattr(policy, "reset") else None
    obs, info = synthetic.reset(seed=episode, options={"task": task})
    robs, _ = reference.reset(seed=episode, options={"task": task})
    done = rdone = False
    log = []
    s_won = r_won = False
    while not done:
        action = policy(obs, info)
        obs, rew, term, trunc, info = synthetic.step(action)
        done = term or trunc
        s_won = bool(info.get("won", term and rew >= 1))
        entry = {"action": action, "syn": [obs, rew, term]}
        if not rdone:
            robs, rrew, rterm, rtrunc, rinfo = reference.step(action)
            rdone = rterm or rtrunc
            r_won = bool(rinfo.get("won", rterm and rrew >= 1))
            entry["ref"] = [robs, rrew, rterm]
            entry["same"] = normalize_state(obs) == normalize_state(robs)
        log.append(entry)
    print(json.dumps({"episode": episode, "task": task.instruction, "synthetic_won": s_won, "reference_won": r_won, "steps": log}))
    sys.stdout.flush()
