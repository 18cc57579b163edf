"""The WebShop domain: an online shop where the agent searches, inspects items and buys one."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from dreamgym_env.envs.domain import ActionError, Domain, DomainPrompt, ParsedAction, Policy, Split
from dreamgym_env.envs.webshop.grammar import clickable_labels, parse_action
from dreamgym_env.envs.webshop.pages import BUY_LABEL, SEARCH_LABEL, search_page
from dreamgym_env.types import Task

if TYPE_CHECKING:
    from dreamgym_env.envs.webshop.reference_env import WebShopRefEnv
    from dreamgym_env.envs.webshop.task_variations import WebShopTaskVariations

PROMPT = DomainPrompt(
    rules="""An online shop (WebShop). The agent is given a shopping instruction and must find \
and buy the product that matches it. Actions:
- search[query]: only on the search page (it shows [Search]); opens page 1 of the results for \
the query. The shop keeps the query in lower case, with brackets, double quotes and bars \
replaced by spaces. Results are ranked by keyword relevance (BM25) over titles, product types, \
categories and option values; at most 50 results, 10 per page; a query that shares no word \
with any product has 0 results.
- click[label]: clicks a label shown in brackets on the current page (case-insensitive):
  - on a results page: an item id such as [B0ABC12345] opens that item; [Next >] and [< Prev] \
change the results page; [Back to Search] returns to the search page;
  - on an item page: an option value such as [large] or [navy blue] selects that option (one \
value per option group, a new click replaces the group's value; the selection is shown on the \
"Selected:" line); [Description], [Features] and [Reviews] open sub-pages; [< Prev] returns to \
the results page the item was opened from; [Back to Search] returns to the search page (the \
selection is lost); [Buy Now] buys the item with the selected options and ends the episode;
  - on a sub-page: [< Prev] returns to the item page with its selection; [Back to Search] \
returns to the search page.
A label that is not on the current page, clicking [Search], or a search where there is no \
[Search] box, is invalid and leaves the page unchanged.""",
    state_format="""Each state is a page of plain text lines. The first line names the page, the \
second repeats the instruction. Clickable labels are in square brackets. Prices have two \
decimals, ratings one. Below, <...> stands for text and lines starting with "..." explain the \
line above them.
Search page:
WebShop | search
Instruction: <instruction>
[Search]
Results page:
WebShop | results | query "<query>" | page <p> of <n> | <total> results
Instruction: <instruction>
[Back to Search] [< Prev] [Next >]
... [< Prev] only after page 1, [Next >] only before the last page.
[<item id>] <title> | $<price>
... one line per item, 10 items per page. With 0 results the header says "page 1 of 1 | 0 \
results" and the single line "No products match the query." replaces the items.
Item page:
WebShop | item <item id> | query "<query>" | page <p>
Instruction: <instruction>
[Back to Search] [< Prev]
<title>
Price: $<price> | Rating: <rating> stars
<option group>: [<value>] [<value>] ...
... one line per option group, e.g. "size: [small] [medium] [large]".
Selected: <group>=<value>, ...
... the selected options in the order of the groups; "Selected: none" before any is chosen.
[Description] [Features] [Reviews] [Buy Now]
Sub-page (description, features or reviews):
WebShop | <description|features|reviews> <item id> | query "<query>" | page <p>
Instruction: <instruction>
[Back to Search] [< Prev]
Selected: <group>=<value>, ...
... the item page's selection, as there.
<sub-page text>
... description: one paragraph; features: "- brand: <brand>", "- category: <category>", then \
one "- <attribute>" line per feature; reviews: one "<name> (<n> stars): <review>" line per review.
After Buy Now:
WebShop | done
Instruction: <instruction>
Purchased <item id> with <group>=<value>, ... for $<price>.
... "with no options" when none was selected.
The query and page on item and sub-pages are those of the results page the item was opened \
from. After an invalid action the page is repeated with a last line \
"Invalid action: <reason>".""",
    reward_rubric="""Only [Buy Now] can complete the task. It is completed (reward 1) when the \
bought item is of the requested product type, has every requested attribute (in its features \
or title), the selected options include every requested option, and its price is within the \
requested bound; wording may differ slightly (case, hyphens, plurals, "gray"/"grey"), numbers \
may not. Any other purchase ends the episode with reward 0; every other action has reward 0.""",
)


@lru_cache(maxsize=4096)
def _admissible_actions(state: str) -> tuple[str, ...]:
    labels = clickable_labels(state)
    search = ("search[<query>]",) if SEARCH_LABEL in labels else ()
    return search + tuple(f"click[{label}]" for label in labels if label != SEARCH_LABEL)


class WebShopDomain(Domain):
    """WebShop: text pages of a web shop, actions ``search[query]`` and ``click[label]``."""

    name = "webshop"
    max_episode_steps = 15

    def parse_action(self, text: str) -> ParsedAction | ActionError:
        return parse_action(text)

    @property
    def prompt(self) -> DomainPrompt:
        return PROMPT

    def tasks(self, split: Split = "train") -> Sequence[Task]:
        """The generated tasks of the default catalog: 5,000 train, 1,000 test."""
        from dreamgym_env.envs.webshop.tasks import load_tasks

        return load_tasks().split(split)

    def make_reference_env(self, **kwargs: Any) -> WebShopRefEnv:
        """The programmatic WebShop (see :class:`~dreamgym_env.envs.webshop.reference_env.WebShopRefEnv`)."""
        from dreamgym_env.envs.webshop.reference_env import WebShopRefEnv

        return WebShopRefEnv(**kwargs)

    def expert_policy(self) -> Policy:
        """A fresh expert policy (it searches with the goal's words, picks a matching item and buys)."""
        from dreamgym_env.envs.webshop.expert import WebShopExpert

        return WebShopExpert()

    def task_variations(self) -> WebShopTaskVariations:
        from dreamgym_env.envs.webshop.task_variations import WebShopTaskVariations

        return WebShopTaskVariations(self)

    def make_task(self, instruction: str) -> Task:
        digest = hashlib.sha1(instruction.encode("utf-8")).hexdigest()[:10]
        return Task(
            id=f"webshop-free-{digest}",
            domain=self.name,
            instruction=instruction,
            initial_state=search_page(instruction),
        )

    def admissible_actions(self, state: str) -> list[str] | None:
        return list(_admissible_actions(state))

    def validate_action(self, action: ParsedAction, state: str) -> ActionError | None:
        labels = clickable_labels(state)
        if action.verb == "search":
            return None if SEARCH_LABEL in labels else ActionError("there is no search box on this page")
        folded = {label.lower() for label in labels if label != SEARCH_LABEL}
        if action.argument.lower() not in folded:
            return ActionError(f'there is no "{action.argument}" to click on this page')
        return None

    def is_terminal_action(self, action: ParsedAction) -> bool:
        return action.verb == "click" and action.argument.lower() == BUY_LABEL.lower()
