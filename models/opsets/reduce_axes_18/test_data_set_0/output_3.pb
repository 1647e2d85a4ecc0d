B
reduceprodJz1@?72?Ñ¬Ÿ=¡Õä>Pö“?&ä&@