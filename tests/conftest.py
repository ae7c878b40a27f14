import matplotlib

matplotlib.use("Agg")  # figures drawn by widget functions never need a screen in tests
