B	updates_eJ0Æw-À´T˜?W£I?¿m™¾'
¥¿Ù6?^=¿ºA¿jó¿`km?pt>@å“>