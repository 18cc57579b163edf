"""The trained WebArena model alone on the build's 100 held-out transitions (no base): a quick look before the build's eval.

python runs/issue28/probe/webarena_quick_eval.py runs/issue28/webarena-distilled-given/install/distilled
"""

import json
import sys

from dreamgym_env.training.evaluate import compare_models, write_result

(result,) = compare_models([sys.argv[1]], n=100, domain="webarena", seed=0)
report = result.report.to_dict()
print(json.dumps({k: v for k, v in report.items() if not isinstance(v, (list, dict))}, indent=1))
print("seconds", result.seconds)
write_result(result, sys.argv[1].rstrip("/") + "-quick-eval.json")
