import sys
print("report for", " ".join(sys.argv[1:]))
