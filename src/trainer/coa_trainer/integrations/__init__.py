"""CoA Studio for runs it did not start: verl's custom reward (verl_reward.py) and TRL's callback and reward
(trl.py). Both grade through the environment server (grader.py); docs/integrations.md shows the overrides."""
