import sys

value, unit = float(sys.argv[1]), sys.argv[2]
if unit == "km":
    print(f"{value:g} km is {value / 1.609344:.2f} mi.")
else:
    print(f"{value:g} mi is {value * 1.609344:.2f} km.")
