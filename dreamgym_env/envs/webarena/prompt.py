"""The WebArena experience-model prompt parts: the action semantics, the observation format, the reward."""

from __future__ import annotations

from dreamgym_env.domain import DomainPrompt
from dreamgym_env.envs.webarena.state import SCROLL_STEP, VIEWPORT

PROMPT = DomainPrompt(
    rules=f"""WebArena: web sites (shopping store, shopping admin panel, reddit-like forums, gitlab, map); \
the agent completes a task by acting on the current page's elements by id.
- click [id]: a link opens its page (new history entry); a button submits its form (state may change, \
the site shows the resulting page and possibly a message); a combobox opens its options; an option selects it.
- type [id] [text] [0|1]: replaces the text of a textbox; with 1 (default) Enter follows, which submits \
search boxes and one-line forms.
- hover [id]: no effect. press [key_comb]: Enter submits the focused field; PageDown/PageUp scroll.
- scroll [up|down]: moves the viewport by {SCROLL_STEP} elements (a page lists at most {VIEWPORT} at once).
- new_tab, tab_focus [index], close_tab: tabs. goto [url]: open a URL of a site. go_back, go_forward: history (no page there: nothing happens).
- stop [answer]: the only action that ends the episode; the answer is judged ("N/A": cannot be done).
Verbs are case-sensitive; "type [id] [] [1]" is invalid.
Invalid, page unchanged plus an error line: an id not on the page, malformed syntax, an unknown URL, \
typing into a non-text element.""",
    state_format="""Observation (axtree mode), as WebArena's TextObervationProcessor prints it, then the URL:
Tab 0 (current): <title> | Tab 1: <title> ...
(a blank line)
[1] RootWebArea '<title>' focused: True
\t[<id>] <role> '<name>' <property>: <value> ...
URL: <url>
... one element a line, one tab of indent per printed ancestor; names as Python's repr; property \
values unquoted. Ids are depth-first over the whole page, stable while it stays; nameless layout \
nodes (list, listitem, banner, navigation) and a StaticText repeating one of the 3 lines before are \
left out. Roles: link, button, textbox, combobox, option, heading, \
StaticText, main, alert (a site message after a form). Properties: focused: True, required: True|False, \
value: <typed text>, expanded: True|False, selected: True|False, hasPopup: menu.
Compact mode: "URL: <url>", "Tabs: [0] <title> (current) | ...", then "[<id>] <role>: <name> (<properties>)" \
for interactive and text elements only.
A page longer than the viewport ends with "(more above: scroll [up])" and/or "(more below: scroll [down])".
After an invalid action the page is repeated with a last line "Invalid action: <reason>".""",
    reward_rubric="""Reward only at the stop [answer] step, which alone ends an episode (WebArena's \
evaluators judge then, never earlier): 1 when every check of the task passes, else 0. A state-changing \
task (add to cart, buy, change an order status or a price, subscribe, vote, comment, post, star, create or \
close an issue, add a member) passes when the sites hold the change at stop; an information task when the \
answer holds the reference (numbers, names or values as the site shows them; "N/A" for a task that cannot \
be done); a navigation task when the page at stop is the requested one. Every other step gives 0, also the \
step of a form submission that makes the change.""",
)
