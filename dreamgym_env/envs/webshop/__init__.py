"""The WebShop domain pack: grammar, prompt, tasks, reference env, expert."""
