import HeraldCore

print("herald")
