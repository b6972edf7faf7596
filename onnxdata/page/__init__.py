"""``explore --html``: the explorer as one self-contained page, with its pictures."""
