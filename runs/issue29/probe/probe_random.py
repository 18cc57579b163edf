"""Random-policy episodes in the synthetic WebShop, replayed in the reference shop: how often each pays."""
import json
import sys

from dreamgym_env.bench.consistency import rollout_consistency
from dreamgym_env.envs.models import pack_models
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.experience.selection import model_from_spec

domain = get_domain("webshop")
model = model_from_spec(sys.argv[1], models=pack_models(domain), domain="webshop")
reports = rollout_consistency(model, domain, episodes=int(sys.argv[2]), policies=("random",), seed=0)
print(json.dumps([r.to_dict() for r in reports], indent=1))
