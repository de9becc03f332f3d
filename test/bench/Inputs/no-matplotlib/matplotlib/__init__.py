# Stands in for a machine without matplotlib (forward-cost.test).
raise ImportError("matplotlib is not installed", name="matplotlib")
