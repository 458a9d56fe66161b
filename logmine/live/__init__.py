"""Live: `logmine follow` keeps the database current while the server runs (`follow`), and raises alerts
from rules (`alerts`, the built-in rules in `alert_rules.toml`)."""
