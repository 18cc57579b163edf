"""The WebShop domain pack: grammar, prompt, generated catalog and tasks, reference env, expert."""
