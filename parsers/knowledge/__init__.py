"""Knowledge about agent prose, as data: the tokenizer's token classes, units, entity patterns, and the
quantities a server log measures with the words agents use for them. `logmine.nlp` and `logmine.claims`
read these files; nothing here is code."""
