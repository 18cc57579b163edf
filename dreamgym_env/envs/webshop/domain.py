"""The WebShop domain: an online shop where the agent searches, inspects items and buys one."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from functools import cached_property
from importlib import resources

from dreamgym_env.envs.domain import ActionError, Domain, DomainPrompt, ParsedAction, Split
from dreamgym_env.envs.webshop.grammar import clickable_labels, parse_action
from dreamgym_env.types import Task

SEARCH_LABEL = "Search"
BUY_LABEL = "Buy Now"

def search_page(instruction: str) -> str:
    """The search page, where every WebShop episode starts."""
    return f"WebShop > search\nInstruction: {instruction}\n[{SEARCH_LABEL}]"


PROMPT = DomainPrompt(
    rules="""An online shop (WebShop). The agent is given a shopping instruction and must find \
and buy the product that matches it. Actions:
- search[query]: only on the search page (it shows [Search]); opens page 1 of the results for query.
- click[label]: clicks a label shown in brackets on the current page:
  - on a results page: an item id such as [B0ABC12345] opens that item; [Next >] and [< Prev] \
change the results page; [Back to Search] returns to the search page;
  - on an item page: an option value such as [large] or [navy blue] selects that option (one \
value per option group; the selection is shown on the "Selected:" line); [Description], \
[Features] and [Reviews] open sub-pages; [< Prev] returns to the results; [Buy Now] buys the \
item with the selected options and ends the episode;
  - on a sub-page: [< Prev] returns to the item page.
A label that is not on the current page, or a search where there is no [Search] box, is invalid \
and leaves the page unchanged.""",
    state_format="""Each state is a page of plain text lines. The first line names the page, the \
second repeats the instruction. Clickable labels are in square brackets.
Search page:
WebShop > search
Instruction: <instruction>
[Search]
Results page:
WebShop > results query="<query>" page <p> of <n> (<total> results)
Instruction: <instruction>
[Back to Search] [< Prev] [Next >]
[<item id>] <title> | $<price>
... (10 items per page; [< Prev] only after page 1, [Next >] only before the last page)
Item page:
WebShop > item <item id>
Instruction: <instruction>
[Back to Search] [< Prev]
<title>
Price: $<price> | Rating: <rating> stars
<option group>: [<value>] [<value>] ...
Selected: <group>=<value>, ... (or "Selected: none")
[Description] [Features] [Reviews] [Buy Now]
Sub-page (description, features or reviews):
WebShop > <description|features|reviews> <item id>
Instruction: <instruction>
[Back to Search] [< Prev]
<text of the sub-page>
After Buy Now:
WebShop > done
Instruction: <instruction>
Purchased <item id> with <group>=<value>, ... for $<price>.""",
    reward_rubric="""Only [Buy Now] can complete the task. It is completed (reward 1) when the \
bought item is of the requested product type, has every requested attribute, the selected \
options are exactly the requested ones, and its price is within the requested bound. Any other \
purchase ends the episode with reward 0; every other action has reward 0.""",
)


class WebShopDomain(Domain):
    """WebShop: text pages of a web shop, actions ``search[query]`` and ``click[label]``."""

    name = "webshop"
    max_episode_steps = 15

    def parse_action(self, text: str) -> ParsedAction | ActionError:
        return parse_action(text)

    @property
    def prompt(self) -> DomainPrompt:
        return PROMPT

    @cached_property
    def _seed_tasks(self) -> list[Task]:
        text = resources.files(__package__).joinpath("seed_tasks.jsonl").read_text(encoding="utf-8")
        return [Task.model_validate(json.loads(line)) for line in text.splitlines() if line.strip()]

    def tasks(self, split: Split = "train") -> Sequence[Task]:
        return self._seed_tasks

    def make_task(self, instruction: str) -> Task:
        digest = hashlib.sha1(instruction.encode("utf-8")).hexdigest()[:10]
        return Task(id=f"webshop-free-{digest}", domain=self.name, instruction=instruction,
                    initial_state=search_page(instruction))

    def admissible_actions(self, state: str) -> list[str] | None:
        labels = clickable_labels(state)
        actions = [f"click[{label}]" for label in labels if label != SEARCH_LABEL]
        if SEARCH_LABEL in labels:
            actions.insert(0, "search[<query>]")
        return actions

    def validate_action(self, action: ParsedAction, state: str) -> ActionError | None:
        labels = clickable_labels(state)
        if action.verb == "search":
            return None if SEARCH_LABEL in labels else ActionError("there is no search box on this page")
        folded = {label.lower() for label in labels if label != SEARCH_LABEL}
        if action.argument.lower() not in folded:
            return ActionError(f"there is no [{action.argument}] to click on this page")
        return None

    def is_terminal_action(self, action: ParsedAction) -> bool:
        return action.verb == "click" and action.argument.lower() == BUY_LABEL.lower()
